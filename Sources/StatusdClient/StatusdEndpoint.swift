import AsyncHTTPClient
import Foundation
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

/// Where a facade sends its calls: the server's base URL, the HTTP client (AsyncHTTPClient's shared one unless the
/// application has its own), the timeout of one call, and middlewares run around every call (tracing, metrics).
public struct StatusdEndpoint: Sendable {
    public var serverURL: URL
    public var httpClient: HTTPClient
    public var timeout: Duration
    public var middlewares: [any ClientMiddleware]

    public init(
        serverURL: URL,
        httpClient: HTTPClient = .shared,
        timeout: Duration = .seconds(30),
        middlewares: [any ClientMiddleware] = []
    ) {
        self.serverURL = serverURL
        self.httpClient = httpClient
        self.timeout = timeout
        self.middlewares = middlewares
    }

    /// The generated client, authenticated with `key`; answers outside 2xx become ``StatusdError``.
    func client(key: String) -> Client {
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        let transport = AsyncHTTPClientTransport(configuration: .init(client: httpClient, timeout: .nanoseconds(nanoseconds)))
        return Client(
            serverURL: serverURL,
            transport: transport,
            middlewares: middlewares + [BearerAuthMiddleware(key: key), StatusdErrorMiddleware()]
        )
    }
}

/// Runs one generated call and throws what went wrong itself: the ``StatusdError`` of an error answer, or the
/// transport's error, rather than the generator's wrapper around them.
func unwrapped<Value>(_ call: () async throws -> Value) async throws -> Value {
    do {
        return try await call()
    } catch let error as ClientError {
        throw error.underlyingError
    }
}
