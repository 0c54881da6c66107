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
    /// Calls rejected by the rate limit.
    static let rateLimited = Counter(label: "statusd_rate_limited_total")
    /// Redis errors seen by request handlers.
    static let redisErrors = Counter(label: "statusd_redis_errors_total")
    /// How late this node's last lease renewal came, beyond its period (a third of the lease): near 0 on a healthy
    /// node; a node whose lag nears two thirds of the lease is about to be taken for dead.
    static let leaseRenewalLag = Gauge(label: "statusd_lease_renewal_lag_seconds")
    /// Webhook deliveries, by outcome.
    static func webhookDeliveries(_ outcome: String) -> Counter {
        Counter(label: "statusd_webhook_deliveries_total", dimensions: [("outcome", outcome)])
    }
}
