import CoreMetrics

/// Connection counters of the client's pool, reported through swift-metrics (a no-op until the application bootstraps a
/// metrics backend). Reconnects are `connects` beyond the pool size.
enum RedisClientMetrics {
    /// Connections established (first connects and reconnects).
    static let connects = Counter(label: "redis_client_connects_total")
    /// Connection attempts that failed (each starts a backoff).
    static let connectFailures = Counter(label: "redis_client_connect_failures_total")
    /// Established connections that closed.
    static let disconnects = Counter(label: "redis_client_disconnects_total")
}
