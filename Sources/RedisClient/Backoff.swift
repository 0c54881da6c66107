import NIOCore

/// The reconnect backoff of every Redis connection (a pool slot, the subscriber, a shard link): the first retry after
/// 50 ms, each further one after twice the last, at most 2 s apart, and back to 50 ms once a connection succeeds. A
/// pure value, so the schedule is tested without a network.
public struct Backoff: Sendable, Hashable {
    /// The first delay, and the delay after a ``reset()``.
    public let initial: TimeAmount
    /// The longest delay.
    public let maximum: TimeAmount
    /// The delay the next failure waits.
    public private(set) var next: TimeAmount

    /// A backoff from `initial` doubling to `maximum`.
    public init(initial: TimeAmount = .milliseconds(50), maximum: TimeAmount = .seconds(2)) {
        self.initial = initial
        self.maximum = maximum
        self.next = initial
    }

    /// The delay to wait after a failure; the one after it doubles, up to ``maximum``.
    public mutating func nextDelay() -> TimeAmount {
        let delay = self.next
        self.next = min(delay * 2, self.maximum)
        return delay
    }

    /// A connection succeeded: the next failure waits ``initial`` again.
    public mutating func reset() {
        self.next = self.initial
    }
}
