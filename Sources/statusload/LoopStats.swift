import Histogram
import NIOCore

/// The receiving side's counters for the devices of one event loop. Only that loop touches them (devices are pinned to
/// a loop), so counting a delivery takes no lock; ``LoadStats`` reads them by running on the loop and merges them.
final class LoopStats: @unchecked Sendable {
    /// The counters, copied out for a merge.
    struct Counters {
        var received: [Int]
        var otherEvents = 0
        var lateEvents = 0
        var repliesOK = 0
        var repliesFailed = 0
        var connects = 0
        var connectFailures = 0
        var drops = 0
    }

    let eventLoop: any EventLoop
    private(set) var counters: Counters
    private(set) var latency = LatencySummary.histogram()
    private(set) var latencyPerNode: [Histogram<UInt64>]
    private(set) var connectTime = LatencySummary.histogram()
    /// Socket reads that brought data (``ReadPacer`` pauses the loop while they keep coming).
    var reads = 0
    /// Changes numbered below this belong to an earlier step: their events are late, not delivered.
    private var stepFirstSequence = 0

    init(eventLoop: any EventLoop, nodeCount: Int) {
        self.eventLoop = eventLoop
        counters = Counters(received: Array(repeating: 0, count: nodeCount))
        latencyPerNode = Array(repeating: LatencySummary.histogram(), count: nodeCount)
    }

    /// A status object carrying change `sequence` (sent at `sentMicros`) reached a device on `node`.
    func recordDelivery(sequence: Int, sentMicros: UInt64, nowMicros: UInt64, node: Int) {
        guard sequence >= stepFirstSequence else {
            counters.lateEvents += 1
            return
        }
        let micros = nowMicros &- sentMicros
        let value = micros > 600_000_000 ? 0 : micros
        counters.received[node] += 1
        latency.record(value)
        // With one node its histogram is the total one (see ``LoadStats/snapshot(histograms:)``).
        if latencyPerNode.count > 1 { latencyPerNode[node].record(value) }
    }

    func recordOtherEvent() { counters.otherEvents += 1 }

    func recordReply(ok: Bool) {
        if ok { counters.repliesOK += 1 } else { counters.repliesFailed += 1 }
    }

    /// A connection reached its welcome after `nanos`.
    func recordConnect(nanos: UInt64) {
        counters.connects += 1
        connectTime.record(nanos / 1000)
    }

    func recordConnectFailure() { counters.connectFailures += 1 }

    /// An established connection ended without the loader asking.
    func recordDrop() { counters.drops += 1 }

    /// Starts a step: event counters and latency histograms from zero, changes before `firstSequence` late.
    func beginStep(firstSequence: Int) {
        stepFirstSequence = firstSequence
        counters.received = Array(repeating: 0, count: counters.received.count)
        counters.lateEvents = 0
        counters.repliesOK = 0
        counters.repliesFailed = 0
        latency.reset()
        for node in latencyPerNode.indices { latencyPerNode[node].reset() }
    }
}
