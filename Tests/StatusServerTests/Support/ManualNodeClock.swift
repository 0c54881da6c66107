import Foundation
import Synchronization

@testable import StatusServer

/// A node clock that moves only when a test says so (``advance(by:)``): its wall and monotonic time start at the
/// system's when it is made and go forward together; a sleeper resumes once the clock has been advanced past its
/// deadline (or when its task is cancelled).
final class ManualNodeClock: NodeClock {
    private struct State {
        var elapsed: Duration = .zero
        var nextId = 0
        var sleepers: [Int: (deadline: Duration, continuation: CheckedContinuation<Void, any Error>)] = [:]
        /// Sleepers not filed yet, and those of them cancelled meanwhile.
        var unfiled: Set<Int> = []
        var cancelled: Set<Int> = []
    }

    private let wallStart = Date()
    private let start = ContinuousClock.now
    private let state = Mutex(State())

    var wallNow: Date { wallStart.addingTimeInterval(Self.seconds(state.withLock { $0.elapsed })) }
    var now: ContinuousClock.Instant { start + state.withLock { $0.elapsed } }

    /// Makes a node's configuration use this clock (for `withStatusd(configure: clock.install)`).
    func install(in configuration: inout ServerConfiguration) {
        configuration.clock = self
    }

    /// How many tasks sleep on this clock now.
    var sleepers: Int { state.withLock { $0.sleepers.count } }

    func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state in
            defer { state.nextId += 1 }
            state.unfiled.insert(state.nextId)
            return state.nextId
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    state.unfiled.remove(id)
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if duration <= .zero { return .success(()) }
                    state.sleepers[id] = (state.elapsed + duration, continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    if state.unfiled.contains(id) { state.cancelled.insert(id) }
                    return CheckedContinuation<Void, any Error>?.none
                }
                return sleeper.continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Advances the clock by `duration` a housekeeping half-tick (250 ms) at a time; stops early once `until` holds.
    /// After each advance it waits (in real time, at most 2 s) until as many tasks sleep on the clock as before it: the
    /// node's loops it woke have done that moment's work and gone back to sleep. A busy machine then slows the steps
    /// down instead of letting the clock run ahead of the loops (a loop busy during an advance would miss it, and fall
    /// behind the node's time for good).
    func step(by duration: Duration, until done: () -> Bool = { false }) async throws {
        var left = duration
        while left > .zero, !done() {
            let step = min(left, .milliseconds(250))
            let asleep = sleepers
            advance(by: step)
            left -= step
            let deadline = ContinuousClock.now + .seconds(2)
            repeat {
                try await Task.sleep(for: .milliseconds(5))
            } while sleepers < asleep && ContinuousClock.now < deadline
        }
    }

    /// Moves the clock forward by `duration` and wakes the sleepers whose deadline has come.
    func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.elapsed += duration
            let due = state.sleepers.filter { $0.value.deadline <= state.elapsed }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Waits (in real time, up to 5 s) until at least `count` tasks sleep on this clock: a loop has reached its sleep.
    func waitForSleepers(_ count: Int = 1) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while sleepers < count {
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "no task came to sleep on the clock") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
