/// Errors thrown by the client.
public struct RedisClientError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// No connection could be made, or the connection is in reconnect backoff; the call was not sent.
        case connectionUnavailable
        /// The connection closed (or the client was closed) before the reply arrived.
        case connectionClosed
        /// Redis answered with an error reply.
        case server
        /// The bytes from Redis did not parse as RESP, or a reply came that nobody asked for.
        case protocolError
        /// No reply arrived within the configured command timeout.
        case timeout
        /// The connection already had `maxPendingPerConnection` commands in flight.
        case tooManyPending
    }

    /// What went wrong.
    public let kind: Kind
    /// A human-readable explanation (for `.server`, the error reply from Redis).
    public let message: String

    /// Creates an error.
    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// `true` when the failure says Redis cannot be reached right now (unavailable, closed, timeout, too many pending):
    /// the caller may answer "service unavailable" and try again later.
    public var isConnectionProblem: Bool {
        switch self.kind {
        case .connectionUnavailable, .connectionClosed, .timeout, .tooManyPending:
            return true
        case .server, .protocolError:
            return false
        }
    }

    /// `kind: message`.
    public var description: String {
        "RedisClientError.\(self.kind): \(self.message)"
    }
}
