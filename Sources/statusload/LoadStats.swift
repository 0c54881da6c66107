import Histogram
import NIOCore
import Synchronization

/// The counters and latency histograms of a run. The sending side (changes, expected events, churn requests) is a few
/// hundred calls per second and sits behind one lock; the receiving side is counted per event loop by ``LoopStats``
/// and merged here when a snapshot is taken. Change and event counters belong to the current step (one target rate);
/// connection counters cover the whole run.
final class LoadStats: Sendable {
    /// A copy of the counters, for progress lines and reports.
    struct Snapshot {
        var changesSent = 0
        var changesFailed = 0
        var changesAcked = 0
        var changesSkipped = 0
        var expected: [Int]
        var received: [Int]
        var lateEvents = 0
        var otherEvents = 0
        var connects = 0
        var connectFailures = 0
        var drops = 0
        var churnRequested = 0
        var closed1012 = 0
        var closed1013 = 0
        var closedWithoutFrame = 0
        var reconnects = 0
        var reconnectAttemptsFailed = 0
        /// Failed attempts by cause: timed out, refused, no local address, other error, closed before the welcome.
        var attemptsFailedBy = [0, 0, 0, 0, 0]
        var refused429 = 0
        var refusedOther = 0
        var flaps = 0
        var offlineShown = 0
        var flapMaxMicros: UInt64 = 0
        var staleMaxMicros: UInt64 = 0
        /// Each reconnect's time from loss to welcome, ms (only with histograms).
        var reconnectMillis: [Float] = []
        var latency: Histogram<UInt64>
        var latencyPerNode: [Histogram<UInt64>]
        var connectTime: Histogram<UInt64>
        /// Connect times of the connections after each device's first (``LoopStats/laterConnectTime``).
        var laterConnectTime: Histogram<UInt64>

        var expectedTotal: Int { expected.reduce(0, +) }
        var receivedTotal: Int { received.reduce(0, +) }
    }

    private struct Sending {
        var nextSequence = 0
        var changesSent = 0
        var changesSkipped = 0
        var httpAcked = 0
        var httpFailed = 0
        var expected: [Int]
        var churnRequested = 0
    }

    /// One per event loop of the devices.
    let loops: [LoopStats]
    private let nodeCount: Int
    private let sending: Mutex<Sending>

    init(loops: [any EventLoop], nodeCount: Int) {
        self.loops = loops.map { LoopStats(eventLoop: $0, nodeCount: nodeCount) }
        self.nodeCount = nodeCount
        sending = Mutex(Sending(expected: Array(repeating: 0, count: nodeCount)))
    }

    /// Merges the sending side and every loop's counters; `histograms: false` skips copying the latency histograms
    /// (for frequent polls).
    func snapshot(histograms: Bool = true) async -> Snapshot {
        var merged = Snapshot(
            expected: [],
            received: Array(repeating: 0, count: nodeCount),
            latency: LatencySummary.histogram(),
            latencyPerNode: Array(repeating: LatencySummary.histogram(), count: nodeCount),
            connectTime: LatencySummary.histogram(),
            laterConnectTime: LatencySummary.histogram()
        )
        for stats in loops {
            let part = try? await stats.eventLoop.submit { () -> (LoopStats.Counters, [Histogram<UInt64>]?, [Float]) in
                (
                    stats.counters, histograms ? [stats.latency, stats.connectTime, stats.laterConnectTime] + stats.latencyPerNode : nil,
                    histograms ? stats.reconnectMillis : []
                )
            }.get()
            guard let (counters, copies, reconnectMillis) = part else { continue }
            merged.closed1012 += counters.closed1012
            merged.closed1013 += counters.closed1013
            merged.closedWithoutFrame += counters.closedWithoutFrame
            merged.reconnects += counters.reconnects
            merged.reconnectAttemptsFailed += counters.reconnectAttemptsFailed
            let causes = [
                counters.attemptsTimedOut, counters.attemptsRefused, counters.attemptsNoAddress, counters.attemptsOtherError,
                counters.attemptsClosedBeforeWelcome,
            ]
            for (index, count) in causes.enumerated() { merged.attemptsFailedBy[index] += count }
            merged.refused429 += counters.refused429
            merged.refusedOther += counters.refusedOther
            merged.flaps += counters.flaps
            merged.offlineShown += counters.offlineShown
            merged.flapMaxMicros = max(merged.flapMaxMicros, counters.flapMaxMicros)
            merged.staleMaxMicros = max(merged.staleMaxMicros, counters.staleMaxMicros)
            merged.reconnectMillis += reconnectMillis
            for node in 0..<nodeCount { merged.received[node] += counters.received[node] }
            merged.lateEvents += counters.lateEvents
            merged.otherEvents += counters.otherEvents
            merged.changesAcked += counters.repliesOK
            merged.changesFailed += counters.repliesFailed
            merged.connects += counters.connects
            merged.connectFailures += counters.connectFailures
            merged.drops += counters.drops
            if let copies {
                merged.latency.add(copies[0])
                merged.connectTime.add(copies[1])
                merged.laterConnectTime.add(copies[2])
                for node in 0..<nodeCount { merged.latencyPerNode[node].add(copies[3 + node]) }
            }
        }
        if nodeCount == 1 { merged.latencyPerNode[0] = merged.latency }
        sending.withLock { state in
            merged.changesSent = state.changesSent
            merged.changesSkipped = state.changesSkipped
            merged.changesAcked += state.httpAcked
            merged.changesFailed += state.httpFailed
            merged.expected = state.expected
            merged.churnRequested = state.churnRequested
        }
        return merged
    }

    /// Starts a new step: change and event counters and latency histograms start from zero.
    func beginStep() async {
        let first = sending.withLock { state -> Int in
            state.changesSent = 0
            state.changesSkipped = 0
            state.httpAcked = 0
            state.httpFailed = 0
            state.expected = Array(repeating: 0, count: nodeCount)
            return state.nextSequence
        }
        for stats in loops {
            try? await stats.eventLoop.submit { stats.beginStep(firstSequence: first) }.get()
        }
    }

    /// Ends the measured phase: an `offline` shown from now on is no longer half of a flap.
    func endMeasuring() async {
        for stats in loops {
            try? await stats.eventLoop.submit { stats.measuring = false }.get()
        }
    }

    /// Runs `body` on every loop, in turn, with that loop's index, and returns the results.
    func onEachLoop<Value: Sendable>(_ body: @escaping @Sendable (Int) -> Value) async -> [Value] {
        var values: [Value] = []
        for (index, stats) in loops.enumerated() {
            if let value = try? await stats.eventLoop.submit({ body(index) }).get() { values.append(value) }
        }
        return values
    }

    /// Records a change about to be sent and returns its sequence number.
    func recordSend(expectedPerNode: [Int]) -> Int {
        sending.withLock { state in
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.changesSent += 1
            for (node, count) in expectedPerNode.enumerated() { state.expected[node] += count }
            return sequence
        }
    }

    /// A change that could not be sent (no device connected).
    func recordSkipped() { sending.withLock { $0.changesSkipped += 1 } }

    /// The answer to a `--via http` change.
    func recordHTTPReply(ok: Bool) {
        sending.withLock { state in
            if ok { state.httpAcked += 1 } else { state.httpFailed += 1 }
        }
    }

    func recordChurnRequest() { sending.withLock { $0.churnRequested += 1 } }
}
