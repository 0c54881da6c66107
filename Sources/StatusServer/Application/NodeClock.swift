import Foundation

/// Where a node reads its own time: the wall time it writes (heartbeats, due times, event times, token expiries) and
/// checks against, the monotonic time its caches, lease bookkeeping and pacing measure with, and its sleeps. One clock
/// is chosen where a node is wired (``ServerConfiguration/clock``, the system's by default) and handed to every part
/// that reads time, so that tests can drive a node's time by hand instead of waiting for it. Time kept by Redis (`TIME`
/// inside the scripts: rate-limit windows, webhook due times) stays Redis's.
public protocol NodeClock: Sendable {
    /// The wall time.
    var wallNow: Date { get }
    /// The monotonic time, for durations measured on this node.
    var now: ContinuousClock.Instant { get }
    /// Suspends for `duration` of this clock's time; throws `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

extension NodeClock {
    /// The wall time in milliseconds since the epoch, as statusd writes it.
    public var nowMs: Int64 { Int64((wallNow.timeIntervalSince1970 * 1000).rounded()) }

    /// The monotonic time in milliseconds from a fixed origin (a day before the process first read it, so never
    /// negative), for the times device sessions keep as integers.
    public var monotonicMs: Int64 { (now - monotonicOrigin).inMilliseconds }

    /// Suspends until `deadline` of this clock's monotonic time.
    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await sleep(for: deadline - now)
    }
}

private let monotonicOrigin = ContinuousClock.now - .seconds(86_400)

/// The system's time: `Date()`, `ContinuousClock` and `Task.sleep`.
public struct SystemNodeClock: NodeClock {
    public init() {}

    public var wallNow: Date { Date() }
    public var now: ContinuousClock.Instant { .now }

    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
