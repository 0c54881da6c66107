import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Turns every answer outside 2xx into a ``StatusdError`` before the generated code sees it, so that each facade call
/// either returns its documented success or throws one typed error, whatever the status code.
struct StatusdErrorMiddleware: ClientMiddleware {
    /// Error bodies are small; a larger one is not the server's.
    static let maxErrorBodyBytes = 64 * 1024

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let (response, responseBody) = try await next(request, body, baseURL)
        guard response.status.kind != .successful else { return (response, responseBody) }
        var data = Data()
        if let responseBody { data = try await Data(collecting: responseBody, upTo: Self.maxErrorBodyBytes) }
        let retryAfter = response.headerFields[.retryAfter].flatMap { Int($0) }
        guard let decoded = try? JSONDecoder().decode(ErrorBody.self, from: data) else {
            throw StatusdError(
                code: .unexpectedResponse,
                message: "\(operationID): HTTP \(response.status.code) without an error body",
                httpStatus: response.status.code
            )
        }
        throw StatusdError(decoded.error, httpStatus: response.status.code, retryAfterSeconds: retryAfter)
    }
}

/// Sends `Authorization: Bearer <key>` with every request: the admin key or an app's API key.
struct BearerAuthMiddleware: ClientMiddleware {
    let key: String

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer \(key)"
        return try await next(request, body, baseURL)
    }
}
