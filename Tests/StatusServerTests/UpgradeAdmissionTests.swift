import Testing

@testable import StatusServer

/// Which device upgrades a node takes on (``UpgradeAdmission``): at most `maxPending` waiting or connecting, the rest
/// refused at once; one whose turn comes too late, or to a stopping node, refused then; one whose connection closed
/// meanwhile skipped.
@Suite struct UpgradeAdmissionTests {
    private static func admission(maxPending: Int = 3, maxWaitMs: Int64 = 5_000) -> UpgradeAdmission {
        var limits = UpgradeAdmission.Limits()
        limits.maxPending = maxPending
        limits.maxWaitMs = maxWaitMs
        return UpgradeAdmission(limits: limits)
    }

    @Test func upgradesPastTheBoundAreRefusedAtOnceUntilOneIsAnswered() {
        var gate = Self.admission(maxPending: 3)
        #expect(gate.arrive(draining: false) == .queue)
        #expect(gate.arrive(draining: false) == .queue)
        #expect(gate.arrive(draining: false) == .queue)
        #expect(gate.pending == 3)
        #expect(gate.arrive(draining: false) == .refuse(.busy))
        #expect(gate.arrive(draining: false) == .refuse(.busy))
        // A refusal takes no place.
        #expect(gate.pending == 3)
        gate.finish()
        #expect(gate.pending == 2)
        #expect(gate.arrive(draining: false) == .queue)
        #expect(gate.arrive(draining: false) == .refuse(.busy))
    }

    @Test func aStoppingNodeRefusesEveryUpgradeWithoutRetryAfter() {
        var gate = Self.admission(maxPending: 3)
        #expect(gate.arrive(draining: true) == .refuse(.draining))
        #expect(gate.pending == 0)
        #expect(gate.retryAfterMs(for: .draining) == nil)
        #expect(gate.retryAfterMs(for: .busy) == UpgradeAdmission.Limits().retryAfterMs)
        #expect(gate.retryAfterMs(for: .late) == UpgradeAdmission.Limits().retryAfterMs)
        // One queued before the drain began is refused when its turn comes.
        #expect(gate.arrive(draining: false) == .queue)
        #expect(gate.turn(waitedMs: 10, draining: true, connectionOpen: true) == .refuse(.draining))
    }

    @Test func aTurnThatComesTooLateIsRefusedAndAClosedConnectionSkipped() {
        let gate = Self.admission(maxWaitMs: 5_000)
        #expect(gate.turn(waitedMs: 0, draining: false, connectionOpen: true) == .connect)
        #expect(gate.turn(waitedMs: 5_000, draining: false, connectionOpen: true) == .connect)
        #expect(gate.turn(waitedMs: 5_001, draining: false, connectionOpen: true) == .refuse(.late))
        // Nobody to answer: skipped, whatever else holds.
        #expect(gate.turn(waitedMs: 0, draining: false, connectionOpen: false) == .skip)
        #expect(gate.turn(waitedMs: 9_000, draining: true, connectionOpen: false) == .skip)
    }

    @Test func finishingMoreThanWasQueuedNeverGoesBelowZero() {
        var gate = Self.admission(maxPending: 1)
        gate.finish()
        #expect(gate.pending == 0)
        #expect(gate.arrive(draining: false) == .queue)
        #expect(gate.arrive(draining: false) == .refuse(.busy))
    }
}
