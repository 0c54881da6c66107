import NIOCore
import Testing

@testable import RedisClient

/// A server that went silent gets one probe call at a time, at most every 250 ms; every other call fails at once, and
/// any reply ends the silence (docs/partitions.md: while Redis is silent a request waits for it at most once).
@Suite struct RedisSilenceGateTests {
    private let start = NIODeadline.now()

    @Test func anAnsweringServerTakesEveryCall() {
        var gate = RedisSilenceGate()
        #expect(gate.admit(at: start) == .send)
        #expect(gate.admit(at: start) == .send)
        #expect(!gate.isSilent)
    }

    @Test func afterATimeoutOneProbeGoesPerIntervalAndTheRestFailAtOnce() {
        var gate = RedisSilenceGate()
        gate.timedOut(at: start)
        #expect(gate.isSilent)
        // Right after the timeout: a request's next call does not wait a second time.
        #expect(gate.admit(at: start + .milliseconds(10)) == .refuse)
        #expect(gate.admit(at: start + .milliseconds(250)) == .probe)
        // One probe at a time.
        #expect(gate.admit(at: start + .milliseconds(600)) == .refuse)
        gate.probeFailed(at: start + .milliseconds(700))
        #expect(gate.admit(at: start + .milliseconds(800)) == .refuse)
        #expect(gate.admit(at: start + .milliseconds(950)) == .probe)
        gate.timedOut(at: start + .milliseconds(2_450))
        #expect(gate.admit(at: start + .milliseconds(2_500)) == .refuse)
    }

    @Test func anyReplyEndsTheSilence() {
        var gate = RedisSilenceGate()
        gate.timedOut(at: start)
        #expect(gate.admit(at: start + .milliseconds(300)) == .probe)
        gate.answered()
        #expect(!gate.isSilent)
        #expect(gate.admit(at: start + .milliseconds(301)) == .send)
    }
}
