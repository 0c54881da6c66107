import CoreMetrics
import Prometheus
import Synchronization

/// Installs the Prometheus backend of swift-metrics once per process (the metrics system can be bootstrapped once;
/// several applications in one process, as in tests, share it).
enum MetricsBootstrap {
    private static let installed = Mutex<PrometheusCollectorRegistry?>(nil)

    /// The process's registry, installing it on first use.
    static func registry() -> PrometheusCollectorRegistry {
        installed.withLock { current in
            if let current { return current }
            let registry = PrometheusCollectorRegistry()
            var factory = PrometheusMetricsFactory(registry: registry)
            factory.defaultDurationHistogramBuckets = [
                .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
                .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
            ]
            MetricsSystem.bootstrap(factory)
            current = registry
            return registry
        }
    }
}
