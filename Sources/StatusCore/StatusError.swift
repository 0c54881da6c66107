/// An error of SPEC §7's table: a stable code, its HTTP status and a human-readable message.
public struct StatusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error codes clients rely on.
    public enum Code: String, Sendable, Hashable, Codable {
        case invalidRequest = "INVALID_REQUEST"
        case invalidUserId = "INVALID_USER_ID"
        case customStatusTooLong = "CUSTOM_STATUS_TOO_LONG"
        case tooManyUsers = "TOO_MANY_USERS"
        case invalidLimit = "INVALID_LIMIT"
        case unauthorized = "UNAUTHORIZED"
        case forbidden = "FORBIDDEN"
        case planNotSupported = "PLAN_NOT_SUPPORTED"
        case featureDisabled = "FEATURE_DISABLED"
        case userNotFound = "USER_NOT_FOUND"
        case appNotFound = "APP_NOT_FOUND"
        case appExists = "APP_EXISTS"
        case requestTimeout = "REQUEST_TIMEOUT"
        case payloadTooLarge = "PAYLOAD_TOO_LARGE"
        case rateLimited = "RATE_LIMITED"
        case unavailable = "UNAVAILABLE"
        case cannotSubscribeSelf = "CANNOT_SUBSCRIBE_SELF"
        case notFound = "NOT_FOUND"
        case methodNotAllowed = "METHOD_NOT_ALLOWED"
        case internalError = "INTERNAL"

        /// The HTTP status that goes with the code.
        public var httpStatus: Int {
            switch self {
            case .invalidRequest, .invalidUserId, .customStatusTooLong, .tooManyUsers, .invalidLimit, .cannotSubscribeSelf: 400
            case .unauthorized: 401
            case .forbidden, .planNotSupported, .featureDisabled: 403
            case .userNotFound, .appNotFound, .notFound: 404
            case .methodNotAllowed: 405
            case .requestTimeout: 408
            case .appExists: 409
            case .payloadTooLarge: 413
            case .rateLimited: 429
            case .unavailable: 503
            case .internalError: 500
            }
        }
    }

    /// The stable code.
    public var code: Code
    /// A message for people.
    public var message: String
    /// For `RATE_LIMITED`: milliseconds until the oldest accepted call leaves the window.
    public var retryAfterMs: Int64?

    /// Creates an error.
    public init(_ code: Code, _ message: String, retryAfterMs: Int64? = nil) {
        self.code = code
        self.message = message
        self.retryAfterMs = retryAfterMs
    }

    /// `Retry-After` in whole seconds, rounded up.
    public var retryAfterSeconds: Int64? {
        retryAfterMs.map { max(1, ($0 + 999) / 1000) }
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
