import NIOCore

/// One write to a command connection: encoded commands and the promise their replies complete.
struct RedisRequest: Sendable {
    /// Where the replies go.
    enum Response: Sendable {
        /// One command; its reply (an error reply included) completes the promise.
        case single(EventLoopPromise<RedisValue>)
        /// `count` pipelined commands; the promise gets all their replies, in order.
        case multiple(count: Int, EventLoopPromise<[RedisValue]>)

        /// The number of replies expected.
        var count: Int {
            switch self {
            case .single:
                return 1
            case .multiple(let count, _):
                return count
            }
        }

        /// Fails the promise.
        func fail(_ error: RedisClientError) {
            switch self {
            case .single(let promise):
                promise.fail(error)
            case .multiple(_, let promise):
                promise.fail(error)
            }
        }
    }

    /// The RESP bytes of every command of the request.
    var bytes: ByteBuffer
    /// Where the replies go.
    var response: Response
}
