import CoreMetrics

/// Connection counters of the client's pool, reported through swift-metrics. Reconnects are `connects` beyond the pool
/// size. Each counter is looked up when used (connection events are rare), so it reaches whatever metrics backend the
/// application bootstrapped, even one bootstrapped after the first client was made.
enum RedisClientMetrics {
    /// Connections established (first connects and reconnects).
    static var connects: Counter { Counter(label: "redis_client_connects_total") }
    /// Connection attempts that failed (each starts a backoff).
    static var connectFailures: Counter { Counter(label: "redis_client_connect_failures_total") }
    /// Established connections that closed.
    static var disconnects: Counter { Counter(label: "redis_client_disconnects_total") }
    /// Cluster redirections followed (`MOVED`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN`).
    static var redirections: Counter { Counter(label: "redis_client_cluster_redirections_total") }
    /// Reads of the cluster's slot map that changed the client's view or confirmed it.
    static var topologyRefreshes: Counter { Counter(label: "redis_client_cluster_topology_refreshes_total") }
}
