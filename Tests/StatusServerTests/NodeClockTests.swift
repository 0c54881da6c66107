import Foundation
import Testing

@testable import StatusServer

/// The node's clock: the system's follows the system's time; the manual one tests drive moves only when advanced, and
/// wakes its sleepers then.
@Suite struct NodeClockTests {
    @Test func theSystemClockReadsTheSystemTime() async throws {
        let clock = SystemNodeClock()
        #expect(abs(clock.wallNow.timeIntervalSince(Date())) < 1)
        #expect(abs(clock.nowMs - Int64(Date().timeIntervalSince1970 * 1000)) < 1000)
        let start = clock.now
        try await clock.sleep(for: .milliseconds(20))
        #expect(clock.now - start >= .milliseconds(20))
    }

    @Test func theManualClockMovesOnlyWhenAdvancedAndItsTwoTimesTogether() async {
        let clock = ManualNodeClock()
        let (wall, now, ms) = (clock.wallNow, clock.now, clock.nowMs)
        await Task.yield()
        #expect(clock.wallNow == wall)
        #expect(clock.now == now)
        clock.advance(by: .milliseconds(1500))
        #expect(clock.now - now == .milliseconds(1500))
        #expect(abs(clock.wallNow.timeIntervalSince(wall) - 1.5) < 0.000_001)
        #expect(clock.nowMs - ms == 1500)
    }

    @Test func aSleeperResumesOnceTheClockPassesItsDeadline() async throws {
        let clock = ManualNodeClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: ContinuousClock.Instant.self) { group in
            group.addTask {
                try await clock.sleep(for: .seconds(1))
                return clock.now
            }
            try await clock.waitForSleepers(1)
            clock.advance(by: .milliseconds(999))
            #expect(clock.sleepers == 1, "not yet due")
            clock.advance(by: .milliseconds(1))
            let woke = try await group.next()
            #expect(woke == start + .seconds(1))
            #expect(clock.sleepers == 0)
        }
    }

    @Test func sleepersWakeInDeadlineOrderAndUntilATime() async throws {
        let clock = ManualNodeClock()
        let woken = try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                try await clock.sleep(for: .seconds(2))
                return 2
            }
            group.addTask {
                try await clock.sleep(until: clock.now + .seconds(1))
                return 1
            }
            try await clock.waitForSleepers(2)
            clock.advance(by: .seconds(1))
            let first = try await group.next()
            #expect(clock.sleepers == 1)
            clock.advance(by: .seconds(5))
            let second = try await group.next()
            return [first, second]
        }
        #expect(woken == [1, 2])
    }

    @Test func aCancelledSleeperThrowsAndAZeroSleepReturnsAtOnce() async throws {
        let clock = ManualNodeClock()
        try await clock.sleep(for: .zero)
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await clock.sleep(for: .seconds(60)) }
            try? await clock.waitForSleepers(1)
            group.cancelAll()
            await #expect(throws: CancellationError.self) { try await group.next() }
        }
        #expect(clock.sleepers == 0)
    }
}
