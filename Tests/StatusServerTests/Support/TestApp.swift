import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import StatusCore

@testable import StatusServer

/// A response as the tests see it: status code, headers and the JSON body (or `.null`).
struct APIResponse {
    var status: Int
    var headers: HTTPFields
    var body: JSONValue
}

/// A client for one statusd app under test, with the admin key and (after ``createApp(config:)``) an app and its key.
struct APIClient {
    let client: any NodeTestClient
    let adminKey: String
    var appId: String = ""
    var apiKey: String = ""

    /// Sends a request with a raw body; `key` nil sends no Authorization header.
    func raw(_ method: HTTPRequest.Method, _ uri: String, key: String?, body: String? = nil) async throws -> APIResponse {
        var headers: HTTPFields = [:]
        if let key { headers[.authorization] = "Bearer \(key)" }
        if body != nil { headers[.contentType] = "application/json" }
        return try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { response in
            let data = Data(buffer: response.body)
            let json = data.isEmpty ? JSONValue.null : (try? JSONDecoder().decode(JSONValue.self, from: data)) ?? .null
            return APIResponse(status: Int(response.status.code), headers: response.headers, body: json)
        }
    }

    /// The node's `/metrics` text, read with the admin key.
    func metricsText() async throws -> String {
        try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(adminKey)"]) {
            String(buffer: $0.body)
        }
    }

    /// Sends a JSON body (any Encodable, usually a dictionary literal of JSONValue) with the app's API key.
    func call(_ method: HTTPRequest.Method, _ path: String, _ body: JSONValue? = nil, key: String? = nil) async throws -> APIResponse {
        let text = try body.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        return try await raw(method, "/v1/apps/\(appId)\(path)", key: key ?? apiKey, body: text)
    }

    /// Sends an admin API request.
    func admin(_ method: HTTPRequest.Method, _ path: String, _ body: JSONValue? = nil) async throws -> APIResponse {
        let text = try body.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        return try await raw(method, path, key: adminKey, body: text)
    }

    /// Creates a fresh app (with a unique id unless one is given) and the given config; returns a client bound to it.
    func createApp(appId: String? = nil, config: JSONValue = .object([:])) async throws -> APIClient {
        let appId = appId ?? "t" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(20).lowercased()
        // Set-up, not the rule under test: a 503 (Redis slower than the command timeout on a busy machine) changed
        // nothing (SPEC §7) and is tried again, a few times.
        let response = try await retryingUnavailable {
            try await admin(.post, "/v1/apps", .object(["appId": .string(appId), "config": config]))
        }
        guard response.status == 201, let key = response.body["apiKey"].string else {
            throw TestAppError(message: "app creation failed: \(response.status) \(response.body)")
        }
        var bound = self
        bound.appId = appId
        bound.apiKey = key
        return bound
    }

    /// Creates users (empty profiles).
    func createUsers(_ userIds: [String]) async throws {
        for userId in userIds {
            let response = try await retryingUnavailable { try await call(.put, "/users/\(userId)", .object([:])) }
            guard response.status == 200 else { throw TestAppError(message: "user creation failed: \(response.body)") }
        }
    }
}

/// A setup step that failed.
struct TestAppError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// The premium app config with the status-query switch on, the usual starting point of tests.
let premiumConfig: JSONValue = .object(["plan": .string("premium"), "statusQuery": .bool(true)])

/// The same config as a value, for the pure tests of the fan-out.
let premiumAppConfig: AppConfig = {
    var config = AppConfig()
    config.plan = .premium
    config.statusQuery = true
    return config
}()

/// How a test runs its node: through the router, with no sockets, or live, with real HTTP and WebSocket connections.
enum NodeTestMode {
    /// HummingbirdTesting's `.router`: requests go to the application's responder.
    case router
    /// The node run as the binary runs it, with its own listener on a free port (``withLiveNode(_:_:)``).
    case live
}

/// Runs `body` against a statusd built by `buildApplication` on the test Redis, through the router (no sockets)
/// or live (`.live`, real HTTP and WebSocket on a free port).
func withStatusd<Value>(
    _ mode: NodeTestMode = .router,
    adminKey: String = "admin-" + UUID().uuidString,
    configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: @Sendable (APIClient) async throws -> Value
) async throws -> Value {
    var logger = Logger(label: "statusd-test")
    logger.logLevel = .warning
    var configuration = ServerConfiguration(host: "127.0.0.1", port: 0, redis: try TestRedis.configuration, adminKey: adminKey)
    configure(&configuration)
    let node = try buildNode(configuration: configuration, logger: logger)
    switch mode {
    case .router:
        return try await node.test(.router) { client in
            try await body(APIClient(client: RouterTestClient(client: client), adminKey: adminKey))
        }
    case .live:
        return try await withLiveNode(node) { client in
            try await body(APIClient(client: client, adminKey: adminKey))
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral,
    ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(Dictionary(elements, uniquingKeysWith: { $1 })) }
    public init(nilLiteral: ()) { self = .null }
}
