import Histogram
import Synchronization

/// The counters and latency histograms of a run, shared by every device task. Change and event counters belong to the
/// current step (one target rate); connection counters cover the whole run.
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
        var latency: Histogram<UInt64>
        var latencyPerNode: [Histogram<UInt64>]
        var connectTime: Histogram<UInt64>

        var expectedTotal: Int { expected.reduce(0, +) }
        var receivedTotal: Int { received.reduce(0, +) }
    }

    private struct State {
        var sendNanos: [UInt64] = []
        var stepFirstSequence = 0
        var snapshot: Snapshot
    }

    private let state: Mutex<State>

    init(nodeCount: Int) {
        state = Mutex(
            State(
                snapshot: Snapshot(
                    expected: Array(repeating: 0, count: nodeCount),
                    received: Array(repeating: 0, count: nodeCount),
                    latency: LatencySummary.histogram(),
                    latencyPerNode: Array(repeating: LatencySummary.histogram(), count: nodeCount),
                    connectTime: LatencySummary.histogram()
                )
            )
        )
    }

    func snapshot() -> Snapshot { state.withLock { $0.snapshot } }

    /// Starts a new step: change and event counters and latency histograms start from zero.
    func beginStep() {
        state.withLock { state in
            let nodes = state.snapshot.expected.count
            state.stepFirstSequence = state.sendNanos.count
            state.snapshot.changesSent = 0
            state.snapshot.changesFailed = 0
            state.snapshot.changesAcked = 0
            state.snapshot.changesSkipped = 0
            state.snapshot.expected = Array(repeating: 0, count: nodes)
            state.snapshot.received = Array(repeating: 0, count: nodes)
            state.snapshot.lateEvents = 0
            state.snapshot.latency = LatencySummary.histogram()
            state.snapshot.latencyPerNode = Array(repeating: LatencySummary.histogram(), count: nodes)
        }
    }

    /// Records a change about to be sent and returns its sequence number.
    func recordSend(expectedPerNode: [Int]) -> Int {
        let now = MonotonicClock.nanos()
        return state.withLock { state in
            let sequence = state.sendNanos.count
            state.sendNanos.append(now)
            state.snapshot.changesSent += 1
            for (node, count) in expectedPerNode.enumerated() { state.snapshot.expected[node] += count }
            return sequence
        }
    }

    /// A change that could not be sent (no device connected).
    func recordSkipped() { state.withLock { $0.snapshot.changesSkipped += 1 } }

    /// The reply to a change (or the HTTP answer): ok or failed.
    func recordReply(ok: Bool) {
        state.withLock { state in
            if ok { state.snapshot.changesAcked += 1 } else { state.snapshot.changesFailed += 1 }
        }
    }

    /// An `onUserStatusChanged` carrying change `sequence` reached a device on `node`.
    func recordDelivery(sequence: Int, sentMs: Int64, node: Int) {
        let now = MonotonicClock.nanos()
        let wallNow = MonotonicClock.epochMs()
        state.withLock { state in
            guard sequence >= state.stepFirstSequence else {
                state.snapshot.lateEvents += 1
                return
            }
            let micros: UInt64
            if sequence < state.sendNanos.count {
                micros = (now &- state.sendNanos[sequence]) / 1000
            } else {
                micros = UInt64(max(wallNow - sentMs, 0)) * 1000
            }
            state.snapshot.received[node] += 1
            state.snapshot.latency.record(micros)
            state.snapshot.latencyPerNode[node].record(micros)
        }
    }

    /// An event that is not one of this step's changes (connects, departures, onlineDevices updates).
    func recordOtherEvent() { state.withLock { $0.snapshot.otherEvents += 1 } }

    /// A connection reached its welcome after `nanos`.
    func recordConnect(nanos: UInt64) {
        state.withLock { state in
            state.snapshot.connects += 1
            state.snapshot.connectTime.record(nanos / 1000)
        }
    }

    func recordConnectFailure() { state.withLock { $0.snapshot.connectFailures += 1 } }

    /// An established connection ended without the loader asking.
    func recordDrop() { state.withLock { $0.snapshot.drops += 1 } }

    func recordChurnRequest() { state.withLock { $0.snapshot.churnRequested += 1 } }
}
