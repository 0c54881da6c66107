import Synchronization

/// What this node did for each app since it started: events written to the app's devices and calls refused by a rate
/// limit. The admin API's per-app stats read it; `/metrics` keeps node-wide totals only, so that the number of apps
/// does not become the number of Prometheus series.
///
/// A session looks its app's ``Counters`` up once, when it connects, so a delivery costs one relaxed atomic add.
final class AppActivity: Sendable {
    /// This node's presence accuracy (departure lag, ghost census), shown with the per-app counts.
    let accuracy: PresenceAccuracy

    /// The counters of one app.
    final class Counters: Sendable {
        /// Events written to the app's devices on this node.
        let eventsDelivered = Atomic<Int>(0)
        /// Calls of the app's users refused with `RATE_LIMITED` on this node (HTTP and WebSocket).
        let rateLimited = Atomic<Int>(0)
    }

    /// A copy of one app's counters.
    struct Snapshot: Sendable, Encodable {
        var eventsDelivered: Int
        var rateLimited: Int
    }

    private let apps = Mutex<[String: Counters]>([:])

    /// Counts for the node whose metrics are `metrics` (the presence accuracy is exported there too).
    init(metrics: NodeMetrics) {
        accuracy = PresenceAccuracy(metrics: metrics)
    }

    /// The counters of `appId`, created on first use.
    func counters(for appId: String) -> Counters {
        apps.withLock { apps in
            if let counters = apps[appId] { return counters }
            let counters = Counters()
            apps[appId] = counters
            return counters
        }
    }

    /// Counts a `RATE_LIMITED` answer to a call of `appId`.
    func recordRateLimited(appId: String) {
        counters(for: appId).rateLimited.add(1, ordering: .relaxed)
    }

    /// The counters of `appId` now (zeros for an app this node has not served).
    func snapshot(of appId: String) -> Snapshot {
        guard let counters = apps.withLock({ $0[appId] }) else { return Snapshot(eventsDelivered: 0, rateLimited: 0) }
        return Snapshot(
            eventsDelivered: counters.eventsDelivered.load(ordering: .relaxed),
            rateLimited: counters.rateLimited.load(ordering: .relaxed)
        )
    }
}
