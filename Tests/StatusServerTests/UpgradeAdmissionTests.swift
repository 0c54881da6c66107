import Testing

@testable import StatusServer

/// Which device upgrades a node takes on (``UpgradeAdmission``): as many pending as it connects in the target wait at
/// its measured rate (within a floor and a cap), the rest refused at once with a `Retry-After` of the time it needs;
/// one whose turn comes too late, or to a stopping node, refused then; one whose connection closed meanwhile skipped.
@Suite struct UpgradeAdmissionTests {
    private static func admission(
        maxPending: Int = 1_000,
        minPending: Int = 3,
        targetWaitMs: Int64 = 2_000,
        maxWaitMs: Int64 = 5_000
    ) -> UpgradeAdmission {
        var limits = UpgradeAdmission.Limits()
        limits.maxPending = maxPending
        limits.minPending = minPending
        limits.targetWaitMs = targetWaitMs
        limits.maxWaitMs = maxWaitMs
        return UpgradeAdmission(limits: limits)
    }

    /// `n` connects begun evenly over the second from `startMs`.
    private static func connect(_ n: Int, from startMs: Int64, on gate: inout UpgradeAdmission) {
        for k in 0..<n {
            _ = gate.arrive(draining: false, nowMs: startMs)
            #expect(gate.turn(waitedMs: 0, draining: false, connectionOpen: true, nowMs: startMs + Int64(k * 1_000 / n)) == .connect)
            gate.finish()
        }
    }

    @Test func beforeARateIsMeasuredTheFloorBoundsThePendingUpgrades() {
        var gate = Self.admission(minPending: 3)
        #expect(gate.arrive(draining: false, nowMs: 0) == .queue)
        #expect(gate.arrive(draining: false, nowMs: 0) == .queue)
        #expect(gate.arrive(draining: false, nowMs: 0) == .queue)
        #expect(gate.pending == 3)
        #expect(gate.arrive(draining: false, nowMs: 0) == .refuse(.busy))
        // A refusal takes no place.
        #expect(gate.pending == 3)
        gate.finish()
        #expect(gate.arrive(draining: false, nowMs: 0) == .queue)
        #expect(gate.arrive(draining: false, nowMs: 0) == .refuse(.busy))
        // No rate known: the shortest Retry-After.
        #expect(gate.retryAfterMs(for: .busy, nowMs: 0) == 1_000)
    }

    @Test func aNodeThatConnectsFasterMayHaveMorePendingAsManyAsItConnectsInTheTargetWait() {
        var gate = Self.admission(maxPending: 1_000, minPending: 3, targetWaitMs: 2_000)
        Self.connect(100, from: 1_000, on: &gate)
        Self.connect(100, from: 2_000, on: &gate)
        // 100 connects/s for 2 s: 200 may be pending.
        #expect(gate.bound(nowMs: 3_000) == 200)
        for _ in 0..<200 { #expect(gate.arrive(draining: false, nowMs: 3_000) == .queue) }
        #expect(gate.arrive(draining: false, nowMs: 3_000) == .refuse(.busy))
        // Its Retry-After is the time the node needs for them: 200 at 100/s.
        #expect(gate.retryAfterMs(for: .busy, nowMs: 3_000) == 2_000)
        // Never past the cap, however fast.
        var capped = Self.admission(maxPending: 50, minPending: 3, targetWaitMs: 2_000)
        Self.connect(100, from: 1_000, on: &capped)
        Self.connect(100, from: 2_000, on: &capped)
        #expect(capped.bound(nowMs: 3_000) == 50)
    }

    @Test func aRateNoLongerMeasuredIsForgottenAndRetryAfterStaysWithinItsBounds() {
        var gate = Self.admission(maxPending: 100_000, minPending: 3, targetWaitMs: 2_000)
        Self.connect(10, from: 1_000, on: &gate)
        Self.connect(10, from: 2_000, on: &gate)
        #expect(gate.bound(nowMs: 2_500) == 20)
        // 20 pending at 10/s take 2 s.
        for _ in 0..<20 { _ = gate.arrive(draining: false, nowMs: 2_500) }
        #expect(gate.retryAfterMs(for: .busy, nowMs: 2_500) == 2_000)
        // No connect for two seconds: the floor again.
        #expect(gate.bound(nowMs: 4_100) == 3)
        var slow = Self.admission(maxPending: 100_000, minPending: 300, targetWaitMs: 2_000)
        Self.connect(10, from: 1_000, on: &slow)
        Self.connect(10, from: 2_000, on: &slow)
        // 300 pending at 10/s would take 30 s: past the longest Retry-After.
        for _ in 0..<300 { _ = slow.arrive(draining: false, nowMs: 2_500) }
        #expect(slow.retryAfterMs(for: .busy, nowMs: 2_500) == 10_000)
    }

    @Test func aStoppingNodeRefusesEveryUpgradeWithoutRetryAfter() {
        var gate = Self.admission()
        #expect(gate.arrive(draining: true, nowMs: 0) == .refuse(.draining))
        #expect(gate.pending == 0)
        #expect(gate.retryAfterMs(for: .draining, nowMs: 0) == nil)
        #expect(gate.retryAfterMs(for: .late, nowMs: 0) == 1_000)
        // One queued before the drain began is refused when its turn comes.
        #expect(gate.arrive(draining: false, nowMs: 0) == .queue)
        #expect(gate.turn(waitedMs: 10, draining: true, connectionOpen: true, nowMs: 0) == .refuse(.draining))
    }

    @Test func aTurnThatComesTooLateIsRefusedAndAClosedConnectionSkipped() {
        var gate = Self.admission(maxWaitMs: 5_000)
        #expect(gate.turn(waitedMs: 0, draining: false, connectionOpen: true, nowMs: 0) == .connect)
        #expect(gate.turn(waitedMs: 5_000, draining: false, connectionOpen: true, nowMs: 0) == .connect)
        #expect(gate.turn(waitedMs: 5_001, draining: false, connectionOpen: true, nowMs: 0) == .refuse(.late))
        // Nobody to answer: skipped, whatever else holds.
        #expect(gate.turn(waitedMs: 0, draining: false, connectionOpen: false, nowMs: 0) == .skip)
        #expect(gate.turn(waitedMs: 9_000, draining: true, connectionOpen: false, nowMs: 0) == .skip)
    }

    @Test func finishingMoreThanWasQueuedNeverGoesBelowZero() {
        var gate = Self.admission(maxPending: 1)
        gate.finish()
        #expect(gate.pending == 0)
        #expect(gate.arrive(draining: false, nowMs: 0) == .queue)
        #expect(gate.arrive(draining: false, nowMs: 0) == .refuse(.busy))
    }
}
