import Foundation

/// An error of the statusd API (SPEC §7 "Errors"), from an HTTP answer or a WebSocket reply, or one the client gives
/// itself (``Code/timeout``, ``Code/disconnected``, ``Code/unexpectedResponse``).
public struct StatusdError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `error.code` of the answer. A struct rather than an enum so that a code a newer server sends still decodes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }
        public var description: String { rawValue }

        public static let invalidRequest: Code = "INVALID_REQUEST"
        public static let invalidUserId: Code = "INVALID_USER_ID"
        public static let customStatusTooLong: Code = "CUSTOM_STATUS_TOO_LONG"
        public static let tooManyUsers: Code = "TOO_MANY_USERS"
        public static let invalidLimit: Code = "INVALID_LIMIT"
        public static let unauthorized: Code = "UNAUTHORIZED"
        public static let forbidden: Code = "FORBIDDEN"
        public static let planNotSupported: Code = "PLAN_NOT_SUPPORTED"
        public static let featureDisabled: Code = "FEATURE_DISABLED"
        public static let userNotFound: Code = "USER_NOT_FOUND"
        public static let appNotFound: Code = "APP_NOT_FOUND"
        public static let appExists: Code = "APP_EXISTS"
        public static let requestTimeout: Code = "REQUEST_TIMEOUT"
        public static let payloadTooLarge: Code = "PAYLOAD_TOO_LARGE"
        public static let rateLimited: Code = "RATE_LIMITED"
        public static let unavailable: Code = "UNAVAILABLE"
        public static let cannotSubscribeSelf: Code = "CANNOT_SUBSCRIBE_SELF"
        public static let notFound: Code = "NOT_FOUND"
        public static let methodNotAllowed: Code = "METHOD_NOT_ALLOWED"
        public static let internalError: Code = "INTERNAL"

        /// Client side: no reply to a device request within its timeout.
        public static let timeout: Code = "TIMEOUT"
        /// Client side: the device is not connected, or its connection closed before the reply.
        public static let disconnected: Code = "DISCONNECTED"
        /// Client side: an answer that is not the document's (no error body, or a body that does not decode).
        public static let unexpectedResponse: Code = "UNEXPECTED_RESPONSE"
    }

    public var code: Code
    public var message: String
    /// The HTTP status of the answer; nil for a WebSocket reply and for the client's own errors.
    public var httpStatus: Int?
    /// With ``Code/rateLimited``: milliseconds until a call can be accepted again.
    public var retryAfterMs: Int?

    public init(code: Code, message: String, httpStatus: Int? = nil, retryAfterMs: Int? = nil) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.retryAfterMs = retryAfterMs
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let httpStatus { text += " (HTTP \(httpStatus))" }
        if let retryAfterMs { text += " retry after \(retryAfterMs) ms" }
        return text
    }
}

/// The `{"error": {"code", "message", "retryAfterMs"}}` body of every error, decoded without the document's closed
/// enum of codes so that any code reaches the caller.
struct ErrorBody: Decodable {
    struct Detail: Decodable {
        var code: String
        var message: String?
        var retryAfterMs: Int?
    }
    var error: Detail
}

extension StatusdError {
    /// The error an HTTP answer or a WebSocket `error` object stands for.
    init(_ detail: ErrorBody.Detail, httpStatus: Int?, retryAfterSeconds: Int? = nil) {
        self.init(
            code: Code(rawValue: detail.code),
            message: detail.message ?? "",
            httpStatus: httpStatus,
            retryAfterMs: detail.retryAfterMs ?? retryAfterSeconds.map { $0 * 1000 }
        )
    }
}
