import Synchronization

/// One read of a key at a time: a call for a key whose read is under way waits for that read's result instead of
/// sending its own.
///
/// Why: a cached copy that goes stale (``AppRegistry``'s apps, every 500 ms) is read again by the first call after it,
/// and without this by every call that comes while that read is on the wire. In a reconnect storm that was a read and
/// a config decode for one connect in eight (`MONITOR` at 2,000 connects/s), on Redis's one thread, when Redis was
/// busiest. A waiting call gets the result of a read sent after the copy went stale, at most one round trip before the
/// call came: no older than what the cache itself may serve. A waiting call is resumed by the reading call's task, so
/// a caller that must not wait on another's scheduling (the fan-out) is better served a copy meanwhile
/// (``AppRegistry/servedWhileReading``).
///
/// Waiters are resumed by the call that reads, once its read ends (with its value or its error); their number is
/// bounded by the calls in flight. A waiter is not woken early by its task's cancellation: the read it waits for is
/// bounded by the Redis client's own deadlines.
final class SingleFlight<Value: Sendable>: Sendable {
    private let waiting = Mutex<[String: [CheckedContinuation<Turn, any Error>]]>([:])

    /// What a call is told when it asks: to read, or the result of the read it waited for.
    private enum Turn {
        case read
        case result(Value)
    }

    init() {}

    /// How many keys have a read under way (for tests).
    var inFlight: Int { waiting.withLock { $0.count } }

    /// Whether a read of `key` is under way.
    func isReading(_ key: String) -> Bool { waiting.withLock { $0[key] != nil } }

    /// `read()`'s result for `key`: run here when no read of `key` is under way, else the result of the one that is.
    /// The call that reads does not suspend to find that out: a task suspended and resumed at once goes to the back of
    /// its executor's queue, and the fan-out's executor is the busiest.
    func run(_ key: String, _ read: () async throws -> Value) async throws -> Value {
        let reading = waiting.withLock { waiting -> Bool in
            guard waiting[key] == nil else { return false }
            waiting[key] = []
            return true
        }
        if !reading {
            // Filed as a waiter under the lock, unless the read ended meanwhile: then this call reads.
            let turn = try await withCheckedThrowingContinuation { continuation in
                let filed = waiting.withLock { waiting -> Bool in
                    guard waiting[key] != nil else {
                        waiting[key] = []
                        return false
                    }
                    waiting[key]!.append(continuation)
                    return true
                }
                if !filed { continuation.resume(returning: Turn.read) }
            }
            if case .result(let value) = turn { return value }
        }
        let result: Result<Value, any Error>
        do {
            result = .success(try await read())
        } catch {
            result = .failure(error)
        }
        let waiters = waiting.withLock { $0.removeValue(forKey: key) ?? [] }
        for waiter in waiters {
            switch result {
            case .success(let value): waiter.resume(returning: .result(value))
            case .failure(let error): waiter.resume(throwing: error)
            }
        }
        return try result.get()
    }
}
