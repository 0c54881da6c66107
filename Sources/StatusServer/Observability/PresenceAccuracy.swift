import Synchronization

/// How truthful this node's presence is, measured (SPEC §10.7 "presence accuracy"): how long after a device's last
/// inbound byte its departure was filed, by reason, and how many device records listed under this node had no live
/// session at the last census (ghosts: watchers see them online although nobody is there). Exported on `/metrics`
/// (`statusd_departure_lag_seconds`, `statusd_ghost_devices`) and, summed up, in the admin stats the console shows.
final class PresenceAccuracy: Sendable {
    /// Departures filed for one reason since the node started.
    struct Departures: Sendable, Encodable, Equatable {
        var count = 0
        var totalMs: Int64 = 0
        var maxMs: Int64 = 0

        /// The mean lag, ms (0 before the first).
        var meanMs: Int64 { count == 0 ? 0 : totalMs / Int64(count) }

        enum CodingKeys: String, CodingKey { case count, meanMs, maxMs }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(count, forKey: .count)
            try container.encode(meanMs, forKey: .meanMs)
            try container.encode(maxMs, forKey: .maxMs)
        }
    }

    /// What the admin stats show.
    struct Snapshot: Sendable, Encodable, Equatable {
        /// Device records listed under this node with no session here at the last census (nil before the first).
        var ghostDevices: Int?
        /// By reason: `disconnect`, `timeout`, `slow`.
        var departures: [String: Departures]
    }

    private let state = Mutex(Snapshot(ghostDevices: nil, departures: [:]))
    /// Where the lags and the census are exported too.
    private let metrics: NodeMetrics

    init(metrics: NodeMetrics) {
        self.metrics = metrics
    }

    /// A departure filed `lagMs` after the device's last inbound byte.
    func departureFiled(reason: String, lagMs: Int64) {
        let lag = max(0, lagMs)
        state.withLock { state in
            var entry = state.departures[reason] ?? Departures()
            entry.count += 1
            entry.totalMs += lag
            entry.maxMs = max(entry.maxMs, lag)
            state.departures[reason] = entry
        }
        metrics.departureLag[reason]?.recordMilliseconds(lag)
    }

    /// The housekeeping's count of this node's device records without a session.
    func ghostCensus(_ count: Int) {
        state.withLock { $0.ghostDevices = count }
        metrics.ghostDevices.record(count)
    }

    var snapshot: Snapshot { state.withLock { $0 } }
}
