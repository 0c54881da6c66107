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
        /// The most tasks ever asleep on the clock at once: the node's loops, all of them idle.
        var mostAsleep = 0
        /// The loops of the node the clock is installed in that sleep on it (0 until it is installed).
        var nodeLoops = 0
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

    /// The loops of a node that sleep on its clock when idle: the housekeeping's lease loop, clock loop and work loop
    /// (``HousekeepingService``).
    static let loopsPerNode = 3

    /// Makes a node's configuration use this clock (for `withStatusd(configure: clock.install)`). From then on a
    /// ``step(by:until:)`` waits for the node's loops, the first time too: a node's first round of housekeeping (dead
    /// nodes, unfiled departures, unfinished deletions) can take seconds on a busy machine, and a clock stepped
    /// meanwhile would run ahead of a loop that never slept on it yet.
    func install(in configuration: inout ServerConfiguration) {
        configuration.clock = self
        state.withLock { $0.nodeLoops = Self.loopsPerNode }
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
                    state.mostAsleep = max(state.mostAsleep, state.sleepers.count)
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
    /// Before each advance, and after the last, it waits (in real time, at most 10 s per wait) until the node's loops
    /// sleep on the clock: they have done the work of the moment before and wait for the next. A busy machine then slows the steps down instead of letting the clock run ahead of the loops: a loop
    /// busy during an advance sleeps again from the moved time and misses that moment's work, and under a full parallel
    /// suite one round of a node's sweeps can take seconds.
    func step(by duration: Duration, until done: () -> Bool = { false }) async throws {
        var left = duration
        while left > .zero, !done() {
            try await waitUntilLoopsSleep()
            let step = min(left, .milliseconds(250))
            advance(by: step)
            left -= step
        }
        try await waitUntilLoopsSleep()
    }

    /// Waits (in real time, at most 10 s) until the loops of the node the clock is installed in sleep on it (as many
    /// tasks as ever did at once, for a clock not installed).
    private func waitUntilLoopsSleep() async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while state.withLock({ $0.sleepers.count < ($0.nodeLoops > 0 ? $0.nodeLoops : $0.mostAsleep) }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
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
