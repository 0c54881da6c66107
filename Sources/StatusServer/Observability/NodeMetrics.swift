import CoreMetrics
import Prometheus
import RedisClient

/// One node's metrics (SPEC §9), exported in Prometheus text at `/metrics`.
///
/// Each node owns its registry and the swift-metrics factory over it; nothing is bootstrapped process-wide. The node's
/// wiring (``buildApplication(configuration:logger:)``, ``NodeWiring``) makes one value and hands each part the
/// handles it records into, so several nodes in one process (as in tests) count apart and `/metrics` shows only its
/// own node's counts.
final class NodeMetrics: Sendable {
    /// What `/metrics` emits.
    let registry: PrometheusCollectorRegistry
    /// Makes the handles recorded into ``registry``: the per-route HTTP series (``RequestMetricsMiddleware``) and the
    /// Redis client's connection counters (``redisClient``) are made with it.
    let factory: PrometheusMetricsFactory

    /// Devices connected to this node over WebSocket.
    let connectedDevices: CoreMetrics.Gauge
    /// Users with at least one device connected to this node.
    let onlineUsers: CoreMetrics.Gauge
    /// Events written to device sockets.
    let eventsDelivered: CoreMetrics.Counter
    /// Devices disconnected because their backlog outgrew its bound.
    let slowConsumers: CoreMetrics.Counter
    /// Bus events dropped because the node could not keep up (followed by a resync).
    let busEventsDropped: CoreMetrics.Counter
    /// Bus messages this node could not decode (dropped).
    let undecodableBusMessages: CoreMetrics.Counter
    /// Gaps in the node's bus feed (resubscription, unanswered ping, overflow), each followed by a resynchronisation.
    let busGaps: CoreMetrics.Counter
    /// Statuses found changed by a resynchronisation and delivered again.
    let resyncedStatuses: CoreMetrics.Counter
    /// Statuses that moved between a relationship change and this node hearing the new target, delivered on catch-up.
    let caughtUpStatuses: CoreMetrics.Counter
    /// Sessions closed after a bus gap because their device was removed meanwhile (a missed kick, logout, replacement
    /// or deletion).
    let auditedDevices: CoreMetrics.Counter
    /// Device sockets closed with 1013 because the node was cut off from Redis past its lease (SPEC §9).
    let cutOffSessions: CoreMetrics.Counter
    /// Device records listed under this node with no live session here, at the housekeeping's last census (ghosts).
    let ghostDevices: CoreMetrics.Gauge
    /// Presence accuracy: the time from a device's last inbound byte to its departure being filed in Redis, by why it
    /// went (`disconnect`: the socket closed; `timeout`: silent past the heartbeat timeout; `slow`: cut off behind).
    /// The time its watchers saw it online although it was gone is at most this.
    let departureLag: [String: CoreMetrics.Timer]
    /// Calls rejected by the rate limit.
    let rateLimited: CoreMetrics.Counter
    /// Redis errors seen by request handlers.
    let redisErrors: CoreMetrics.Counter
    /// How late this node's last lease renewal came, beyond its period (a third of the lease): near 0 on a healthy
    /// node; a node whose lag nears two thirds of the lease is about to be taken for dead.
    let leaseRenewalLag: CoreMetrics.Gauge
    /// Webhook deliveries that the receiver accepted.
    let webhooksDelivered: CoreMetrics.Counter
    /// Webhook deliveries that failed and are tried again later.
    let webhooksRetried: CoreMetrics.Counter
    /// Webhook events given up: past their attempts, or dropped oldest-first from a full queue.
    let webhooksDropped: CoreMetrics.Counter
    /// HTTP requests (device upgrades included) closed because they did not arrive whole, or were not answered,
    /// within the request timeout of their first byte.
    let requestTimeouts: CoreMetrics.Counter
    /// Device upgrades queued or connecting on this node (bounded by `--max-pending-connects`).
    let pendingUpgrades: CoreMetrics.Gauge
    /// How long a device upgrade waited for its turn in the node's work queue (admission to the start of its connect).
    let upgradeWait: CoreMetrics.Timer
    /// The Redis client's connection counters, recorded into this node's registry.
    let redisClient: RedisClientMetrics
    /// Makes the handles of ``deviceUpgrades(_:)``.
    private let upgradeOutcomes: [String: CoreMetrics.Counter]

    static let departureLagLabel = "statusd_departure_lag_seconds"
    static let upgradeWaitLabel = "statusd_device_upgrade_wait_seconds"
    /// The outcomes of ``deviceUpgrades(_:)``.
    static let upgradeOutcomeNames = ["accepted", "refused", "unavailable", "busy", "late", "draining", "gone"]

    /// Device upgrades (`GET /v1/connect`), by how their admission ended: `accepted` (101), `refused` (a SPEC error
    /// other than 503: token, parameters, `connectRateLimit`), `unavailable` (503 from Redis), `busy` (503 at once:
    /// too many upgrades pending, see ``UpgradeAdmission``), `late` (503: waited past its bound before its turn),
    /// `draining` (503: the node is stopping), `gone` (the connection closed before its answer, or before its turn:
    /// the client gave up or the request's deadline closed it). A storm that overwhelms a node shows as `gone`, which
    /// costs the node the whole connect for nothing, unless it shows as `busy` first.
    func deviceUpgrades(_ outcome: String) -> CoreMetrics.Counter {
        upgradeOutcomes[outcome] ?? upgradeOutcomes["refused"]!
    }

    init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
        ]
        // Presence accuracy: from a device's last inbound byte to its departure being filed, up to the heartbeat
        // timeouts apps choose (400 s by default).
        factory.durationHistogramBuckets[Self.departureLagLabel] = [
            .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5),
            .seconds(10), .seconds(30), .seconds(60), .seconds(120), .seconds(300), .seconds(600),
        ]
        // A device upgrade's wait for its turn: well under a second on a node that keeps up, up to the request timeout
        // (10 s) on one that does not.
        factory.durationHistogramBuckets[Self.upgradeWaitLabel] = [
            .milliseconds(1), .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30),
        ]
        self.registry = registry
        self.factory = factory
        func counter(_ label: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: label, dimensions: dimensions, factory: factory)
        }
        func gauge(_ label: String) -> CoreMetrics.Gauge { CoreMetrics.Gauge(label: label, factory: factory) }
        connectedDevices = gauge("statusd_connected_devices")
        onlineUsers = gauge("statusd_local_online_users")
        eventsDelivered = counter("statusd_events_delivered_total")
        slowConsumers = counter("statusd_slow_consumer_disconnects_total")
        busEventsDropped = counter("statusd_bus_events_dropped_total")
        undecodableBusMessages = counter("statusd_bus_undecodable_total")
        busGaps = counter("statusd_bus_gaps_total")
        resyncedStatuses = counter("statusd_resynced_statuses_total")
        caughtUpStatuses = counter("statusd_caught_up_statuses_total")
        auditedDevices = counter("statusd_gap_closed_sessions_total")
        cutOffSessions = counter("statusd_cut_off_sessions_total")
        ghostDevices = gauge("statusd_ghost_devices")
        departureLag = Dictionary(
            uniqueKeysWithValues: ["disconnect", "timeout", "slow"].map { reason in
                (reason, CoreMetrics.Timer(label: Self.departureLagLabel, dimensions: [("reason", reason)], factory: factory))
            }
        )
        rateLimited = counter("statusd_rate_limited_total")
        redisErrors = counter("statusd_redis_errors_total")
        leaseRenewalLag = gauge("statusd_lease_renewal_lag_seconds")
        webhooksDelivered = counter("statusd_webhook_deliveries_total", [("outcome", "success")])
        webhooksRetried = counter("statusd_webhook_deliveries_total", [("outcome", "retry")])
        webhooksDropped = counter("statusd_webhook_deliveries_total", [("outcome", "dropped")])
        requestTimeouts = counter("statusd_request_timeouts_total")
        pendingUpgrades = gauge("statusd_pending_device_upgrades")
        upgradeWait = CoreMetrics.Timer(label: Self.upgradeWaitLabel, factory: factory)
        upgradeOutcomes = Dictionary(
            uniqueKeysWithValues: Self.upgradeOutcomeNames.map { ($0, counter("statusd_device_upgrades_total", [("outcome", $0)])) }
        )
        redisClient = RedisClientMetrics(factory: factory)
    }
}
