import CoreMetrics

/// Connection counters of the client's pool, reported through swift-metrics. Reconnects are `connects` beyond the pool
/// size. The handles are made from the factory the client is given, so an application that keeps its own registry (a
/// statusd node) gets its client's counts there and nowhere else; without one they go to the process's bootstrapped
/// metrics system, or nowhere.
public struct RedisClientMetrics: Sendable {
    /// Connections established (first connects and reconnects).
    let connects: Counter
    /// Connection attempts that failed (each starts a backoff).
    let connectFailures: Counter
    /// Established connections that closed.
    let disconnects: Counter
    /// Cluster redirections followed (`MOVED`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN`).
    let redirections: Counter
    /// Reads of the cluster's slot map that changed the client's view or confirmed it.
    let topologyRefreshes: Counter

    /// The counters, made by `factory`.
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        connects = Counter(label: "redis_client_connects_total", factory: factory)
        connectFailures = Counter(label: "redis_client_connect_failures_total", factory: factory)
        disconnects = Counter(label: "redis_client_disconnects_total", factory: factory)
        redirections = Counter(label: "redis_client_cluster_redirections_total", factory: factory)
        topologyRefreshes = Counter(label: "redis_client_cluster_topology_refreshes_total", factory: factory)
    }
}
