import Foundation
import HTTPTypes
import OpenAPIRuntime
import StatusdClient
import Synchronization

extension APIClient {
    /// The package's client, pointed at this live server (`withStatusd(.live)`).
    func endpoint(middlewares: [any ClientMiddleware] = []) throws -> StatusdEndpoint {
        guard let port = client.port else { throw TestAppError(message: "the client facades need a live server") }
        return StatusdEndpoint(serverURL: URL(string: "http://127.0.0.1:\(port)")!, timeout: .seconds(10), middlewares: middlewares)
    }

    /// The admin facade with this server's admin key.
    func adminFacade(middlewares: [any ClientMiddleware] = []) throws -> StatusdAdmin {
        StatusdAdmin(try endpoint(middlewares: middlewares), adminKey: adminKey)
    }

    /// The server API facade of the app this client is bound to.
    func appFacade(middlewares: [any ClientMiddleware] = []) throws -> StatusdApp {
        StatusdApp(try endpoint(middlewares: middlewares), appId: appId, apiKey: apiKey)
    }
}

/// Records the `operationId` of every call that goes through a facade, as the generated client names it.
final class OperationRecorder: ClientMiddleware, Sendable {
    private let seen = Mutex<Set<String>>([])

    var operationIds: Set<String> { seen.withLock { $0 } }

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        _ = seen.withLock { $0.insert(operationID) }
        return try await next(request, body, baseURL)
    }
}

/// The OpenAPI document the server serves, from the package's sources.
enum OpenAPIDocumentFile {
    static let serverCopy = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/StatusServer/Resources/openapi.json")
    static let generatorInput =
        serverCopy
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("StatusdClient/openapi.json")

    /// The `operationId` of every operation under `prefix`.
    static func operationIds(under prefix: String) throws -> Set<String> {
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: serverCopy)) as? [String: Any]
        let paths = document?["paths"] as? [String: [String: Any]] ?? [:]
        var ids: Set<String> = []
        for (path, item) in paths where path.hasPrefix(prefix) {
            for case let operation as [String: Any] in item.values {
                if let id = operation["operationId"] as? String { ids.insert(id) }
            }
        }
        return ids
    }
}
