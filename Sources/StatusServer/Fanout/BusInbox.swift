import CoreMetrics
import Synchronization

/// The bounded hand-over between the bus connection (whose event loop pushes) and the fan-out consumer (which takes
/// everything waiting at once, so one batch is delivered and flushed together).
///
/// A gap in the feed is a flag beside the queue, never an entry in it: when the queue is full the message is dropped
/// and the flag set, and the flag cannot be dropped with it. The consumer then resynchronises (``FanoutService``).
final class BusInbox: Sendable {
    /// What the consumer takes: the messages in order, and whether the feed had a gap before or among them.
    struct Batch: Sendable {
        var messages: [[UInt8]]
        var gap: Bool
    }

    private struct State {
        var messages: [[UInt8]] = []
        var gap = false
        var finished = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    let limit: Int
    /// Counts the messages dropped past the limit.
    private let dropped: Counter
    private let state = Mutex(State())

    init(limit: Int, dropped: Counter) {
        self.limit = limit
        self.dropped = dropped
    }

    /// Queues a message; past the limit it is dropped, counted, and the gap flag set.
    func push(_ payload: [UInt8]) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.messages.count >= limit {
                state.gap = true
                dropped.increment()
            } else {
                state.messages.append(payload)
            }
            return Self.takeWaiter(&state)
        }
        waiter?.resume()
    }

    /// Records a gap (a resubscription, an unanswered ping, a failed resynchronisation to retry).
    func markGap() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.gap = true
            return Self.takeWaiter(&state)
        }
        waiter?.resume()
    }

    /// Ends ``next()``: it returns what is left, then nil.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finished = true
            return Self.takeWaiter(&state)
        }
        waiter?.resume()
    }

    /// Everything waiting, or (when nothing is) the next thing to arrive; nil once finished. One consumer only.
    func next() async -> Batch? {
        while true {
            let batch: Batch?? = state.withLock { state in
                if !state.messages.isEmpty || state.gap {
                    defer {
                        state.messages = []
                        state.gap = false
                    }
                    return .some(Batch(messages: state.messages, gap: state.gap))
                }
                return state.finished ? .some(nil) : nil
            }
            if let batch { return batch }
            // Woken by push, markGap or finish; the loop then takes what they left.
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if !state.messages.isEmpty || state.gap || state.finished { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    private static func takeWaiter(_ state: inout State) -> CheckedContinuation<Void, Never>? {
        defer { state.waiter = nil }
        return state.waiter
    }
}
