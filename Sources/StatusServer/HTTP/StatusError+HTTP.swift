import Foundation
import Hummingbird
import StatusCore

extension StatusError: HTTPResponseError {
    public var status: HTTPResponse.Status { .init(code: code.httpStatus) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response()
    }

    /// The SPEC §7 error response: the status, the error body and, for a refusal that names a wait, `Retry-After`.
    func response() -> Response {
        var response = JSONResponse(ErrorBody(error: self)).response(status: status)
        if let seconds = retryAfterSeconds {
            response.headers[.retryAfter] = String(seconds)
        }
        return response
    }
}

/// The SPEC §7 error body: `{"error": {"code", "message", "retryAfterMs"?}}`.
struct ErrorBody: Encodable, Sendable {
    let error: StatusError

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .error)
        try nested.encode(error.code.rawValue, forKey: .code)
        try nested.encode(error.message, forKey: .message)
        try nested.encodeIfPresent(error.retryAfterMs, forKey: .retryAfterMs)
    }

    enum Keys: String, CodingKey {
        case error
        case code
        case message
        case retryAfterMs
    }
}
