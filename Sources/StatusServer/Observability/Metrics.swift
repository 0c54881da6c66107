import Metrics

/// The node's metrics (SPEC §9), exported in Prometheus text at `/metrics`.
enum Metrics {
    /// Devices connected to this node over WebSocket.
    static let connectedDevices = Gauge(label: "statusd_connected_devices")
    /// Users with at least one device connected to this node.
    static let onlineUsers = Gauge(label: "statusd_local_online_users")
    /// Events written to device sockets.
    static let eventsDelivered = Counter(label: "statusd_events_delivered_total")
    /// Devices disconnected because their backlog outgrew its bound.
    static let slowConsumers = Counter(label: "statusd_slow_consumer_disconnects_total")
    /// Bus events dropped because the node could not keep up (followed by a resync).
    static let busEventsDropped = Counter(label: "statusd_bus_events_dropped_total")
    /// Bus messages this node could not decode (dropped).
    static let undecodableBusMessages = Counter(label: "statusd_bus_undecodable_total")
    /// Gaps in the node's bus feed (resubscription, unanswered ping, overflow), each followed by a resynchronisation.
    static let busGaps = Counter(label: "statusd_bus_gaps_total")
    /// Statuses found changed by a resynchronisation and delivered again.
    static let resyncedStatuses = Counter(label: "statusd_resynced_statuses_total")
    /// Statuses that moved between a relationship change and this node hearing the new target, delivered on catch-up.
    static let caughtUpStatuses = Counter(label: "statusd_caught_up_statuses_total")
    /// Sessions closed after a bus gap because their device was removed meanwhile (a missed kick, logout, replacement
    /// or deletion).
    static let auditedDevices = Counter(label: "statusd_gap_closed_sessions_total")
    /// Device sockets closed with 1013 because the node was cut off from Redis past its lease (SPEC §9).
    static let cutOffSessions = Counter(label: "statusd_cut_off_sessions_total")
    /// Device records listed under this node with no live session here, at the housekeeping's last census (ghosts).
    static let ghostDevices = Gauge(label: "statusd_ghost_devices")
    static let departureLagLabel = "statusd_departure_lag_seconds"
    /// Presence accuracy: the time from a device's last inbound byte to its departure being filed in Redis, by why it
    /// went (`disconnect`: the socket closed; `timeout`: silent past the heartbeat timeout; `slow`: cut off behind).
    /// The time its watchers saw it online although it was gone is at most this.
    static let departureLag = [
        "disconnect": Timer(label: departureLagLabel, dimensions: [("reason", "disconnect")]),
        "timeout": Timer(label: departureLagLabel, dimensions: [("reason", "timeout")]),
        "slow": Timer(label: departureLagLabel, dimensions: [("reason", "slow")]),
    ]
    /// Calls rejected by the rate limit.
    static let rateLimited = Counter(label: "statusd_rate_limited_total")
    /// Redis errors seen by request handlers.
    static let redisErrors = Counter(label: "statusd_redis_errors_total")
    /// How late this node's last lease renewal came, beyond its period (a third of the lease): near 0 on a healthy
    /// node; a node whose lag nears two thirds of the lease is about to be taken for dead.
    static let leaseRenewalLag = Gauge(label: "statusd_lease_renewal_lag_seconds")
    /// Device upgrades (`GET /v1/connect`), by how their admission ended: `accepted` (101), `refused` (a SPEC error
    /// other than 503: token, parameters, `connectRateLimit`), `unavailable` (503 from Redis), `busy` (503 at once:
    /// too many upgrades pending, see ``UpgradeAdmission``), `late` (503: waited past its bound before its turn),
    /// `draining` (503: the node is stopping), `gone` (the connection closed before its answer, or before its turn:
    /// the client gave up or the request's deadline closed it). A storm that overwhelms a node shows as `gone`, which costs the node the
    /// whole connect for nothing, unless it shows as `busy` first.
    static func deviceUpgrades(_ outcome: String) -> Counter {
        Counter(label: "statusd_device_upgrades_total", dimensions: [("outcome", outcome)])
    }
    /// HTTP requests (device upgrades included) closed because they did not arrive whole, or were not answered,
    /// within the request timeout of their first byte.
    static let requestTimeouts = Counter(label: "statusd_request_timeouts_total")
    /// How long a device upgrade waited for its turn in the node's work queue (admission to the start of its connect).
    /// Device upgrades queued or connecting on this node (bounded by `--max-pending-connects`).
    static let pendingUpgrades = Gauge(label: "statusd_pending_device_upgrades")
    static let upgradeWaitLabel = "statusd_device_upgrade_wait_seconds"
    static let upgradeWait = Timer(label: upgradeWaitLabel)
    /// Webhook deliveries, by outcome.
    static func webhookDeliveries(_ outcome: String) -> Counter {
        Counter(label: "statusd_webhook_deliveries_total", dimensions: [("outcome", outcome)])
    }
}
