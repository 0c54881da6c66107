import Histogram
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

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
        /// Failover (`--failover`): connections the server closed with 1012 (drain) or 1013 (try again later), those
        /// that ended without a close frame (the node went away), reconnects that reached their welcome, attempts
        /// that did not, and upgrades refused with 429 (`connectRateLimit`) or another status.
        var closed1012 = 0
        var closed1013 = 0
        var closedWithoutFrame = 0
        var reconnects = 0
        var reconnectAttemptsFailed = 0
        /// Why failover attempts failed: the TCP connect timed out (10 s), was refused, found no local address (no
        /// ephemeral port left) or failed otherwise, or the connection opened and closed before its welcome.
        var attemptsTimedOut = 0
        var attemptsRefused = 0
        var attemptsNoAddress = 0
        var attemptsOtherError = 0
        var attemptsClosedBeforeWelcome = 0
        var refused429 = 0
        var refusedOther = 0
        /// Watchers (`--failover` with subscriptions): offline→online pairs shown while measuring, `offline` shown
        /// while measuring, the longest such pair, and the longest a change took to reach a watcher (first receipt of
        /// its version, through an event, a resume or a snapshot), in µs.
        var flaps = 0
        var offlineShown = 0
        var flapMaxMicros: UInt64 = 0
        var staleMaxMicros: UInt64 = 0
    }

    let eventLoop: any EventLoop
    private(set) var counters: Counters
    private(set) var latency = LatencySummary.histogram()
    private(set) var latencyPerNode: [Histogram<UInt64>]
    private(set) var connectTime = LatencySummary.histogram()
    /// The same for the connections after each device's first (the churn's reconnects): a churn's connect times must not
    /// include the initial ramp, whose thousands of connects at once would make them its own.
    private(set) var laterConnectTime = LatencySummary.histogram()
    /// Socket reads that brought data (``ReadPacer`` pauses the loop while they keep coming).
    var reads = 0
    /// Each reconnect's time from the loss of the connection to the welcome, in ms (`--failover`).
    private(set) var reconnectMillis: [Float] = []
    /// Whether the measured phase (the steps) is on: an `offline` shown before it is not half of a flap.
    var measuring = false
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

    /// A connection reached its welcome after `nanos`; `first`: the device's first connection of the run.
    func recordConnect(nanos: UInt64, first: Bool) {
        counters.connects += 1
        connectTime.record(nanos / 1000)
        if !first { laterConnectTime.record(nanos / 1000) }
    }

    func recordConnectFailure() { counters.connectFailures += 1 }

    /// A device lost its connection: closed by the server with `code`, or without a close frame (nil).
    func recordServerClose(code: UInt16?) {
        switch code {
        case 1012: counters.closed1012 += 1
        case 1013: counters.closed1013 += 1
        case nil: counters.closedWithoutFrame += 1
        default: break
        }
    }

    /// A reconnect reached its welcome `nanos` after the connection was lost.
    func recordReconnect(nanos: UInt64) {
        counters.reconnects += 1
        reconnectMillis.append(Float(Double(nanos) / 1e6))
    }

    /// A failover attempt failed: its connect with `error`, or (nil) it closed before its welcome.
    func recordReconnectAttemptFailed(_ error: (any Error)?) {
        counters.reconnectAttemptsFailed += 1
        guard let error else {
            counters.attemptsClosedBeforeWelcome += 1
            return
        }
        if let error = error as? ChannelError, case .connectTimeout = error {
            counters.attemptsTimedOut += 1
        } else if let error = error as? IOError, error.errnoCode == ECONNREFUSED {
            counters.attemptsRefused += 1
        } else if let error = error as? IOError, error.errnoCode == EADDRNOTAVAIL {
            counters.attemptsNoAddress += 1
        } else {
            counters.attemptsOtherError += 1
        }
    }

    /// An upgrade answered with `status` instead of 101.
    func recordRefusal(status: Int) {
        if status == 429 { counters.refused429 += 1 } else { counters.refusedOther += 1 }
    }

    /// A watcher was shown a watched user `offline` while measuring.
    func recordOfflineShown() { counters.offlineShown += 1 }

    /// A watcher was shown a watched user `online` again `micros` after `offline`.
    func recordFlap(micros: UInt64) {
        counters.flaps += 1
        counters.flapMaxMicros = max(counters.flapMaxMicros, micros)
        counters.staleMaxMicros = max(counters.staleMaxMicros, micros)
    }

    /// A watcher first received a change `micros` after it was made.
    func recordFirstReceipt(micros: UInt64) {
        guard measuring, micros < 600_000_000 else { return }
        counters.staleMaxMicros = max(counters.staleMaxMicros, micros)
    }

    /// An established connection ended without the loader asking.
    func recordDrop() { counters.drops += 1 }

    /// Starts a step: event counters and latency histograms from zero, changes before `firstSequence` late.
    func beginStep(firstSequence: Int) {
        measuring = true
        stepFirstSequence = firstSequence
        counters.received = Array(repeating: 0, count: counters.received.count)
        counters.lateEvents = 0
        counters.repliesOK = 0
        counters.repliesFailed = 0
        latency.reset()
        for node in latencyPerNode.indices { latencyPerNode[node].reset() }
    }
}
