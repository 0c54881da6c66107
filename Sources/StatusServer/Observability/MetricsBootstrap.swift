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
            // Presence accuracy: from a device's last inbound byte to its departure being filed, up to the heartbeat
            // timeouts apps choose (400 s by default).
            factory.durationHistogramBuckets[Metrics.departureLagLabel] = [
                .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5),
                .seconds(10), .seconds(30), .seconds(60), .seconds(120), .seconds(300), .seconds(600),
            ]
            // A device upgrade's wait for its turn: well under a second on a node that keeps up, up to the request
            // timeout (10 s) on one that does not.
            factory.durationHistogramBuckets[Metrics.upgradeWaitLabel] = [
                .milliseconds(1), .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30),
            ]
            MetricsSystem.bootstrap(factory)
            current = registry
            return registry
        }
    }
}
