import Synchronization

/// One read of a key at a time: a call for a key whose read is under way waits for that read's result instead of
/// sending its own.
///
/// Why: a cached copy that goes stale (``AppRegistry``'s apps, every 500 ms) is read again by the first call after it,
/// and without this by every call that comes while that read is on the wire. In a reconnect storm that was a read and
/// a config decode for one connect in eight (`MONITOR` at 2,000 connects/s), on Redis's one thread, when Redis was
/// busiest. A waiting call gets the result of a read sent after the copy went stale, at most one round trip before the
/// call came: no older than what the cache itself may serve.
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

    /// `read()`'s result for `key`: run here when no read of `key` is under way, else the result of the one that is.
    func run(_ key: String, _ read: () async throws -> Value) async throws -> Value {
        // Whether to read or to wait is decided, and the waiter filed, under one lock.
        let turn = try await withCheckedThrowingContinuation { continuation in
            let reading = waiting.withLock { waiting -> Bool in
                guard waiting[key] != nil else {
                    waiting[key] = []
                    return true
                }
                waiting[key]!.append(continuation)
                return false
            }
            if reading { continuation.resume(returning: Turn.read) }
        }
        if case .result(let value) = turn { return value }
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
