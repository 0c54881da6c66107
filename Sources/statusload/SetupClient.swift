import AsyncHTTPClient
import Foundation
import NIOPosix
import StatusdClient

/// The HTTP calls of the set-up phase (and of `--via http` changes), through the package's own client: the admin API
/// with the admin key, the server API with the app's API key. 429, 503 and transport errors are retried.
struct SetupClient: Sendable {
    let endpoint: StatusdEndpoint
    let admin: StatusdAdmin
    private let httpClient: HTTPClient

    init(baseURL: String, adminKey: String, maxConnections: Int) throws {
        guard let url = URL(string: baseURL) else { throw SetupError("bad URL \(baseURL)") }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = maxConnections
        httpClient = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        endpoint = StatusdEndpoint(serverURL: url, httpClient: httpClient, timeout: .seconds(30))
        admin = StatusdAdmin(endpoint, adminKey: adminKey)
    }

    /// Closes the HTTP client's connections; the last call on this client.
    func shutdown() async throws {
        try await httpClient.shutdown()
    }

    /// The server API of one app.
    func app(_ appId: String, apiKey: String) -> StatusdApp {
        StatusdApp(endpoint, appId: appId, apiKey: apiKey)
    }

    /// Creates the app and returns its API key.
    func createApp(_ appId: String, config: AppConfigPatch) async throws -> String {
        try await retrying { try await admin.createApp(appId, config: config).apiKey }
    }

    func deleteApp(_ appId: String) async throws {
        try await retrying { try await admin.deleteApp(appId) }
    }

    /// How many users the server lists as online, every page of `GET /users?status=online`.
    func countOnlineUsers(app: StatusdApp) async throws -> Int {
        var count = 0
        var cursor: String?
        for _ in 0..<10_000 {
            let page = try await retrying { try await app.listUsers(status: .online, limit: 100, cursor: cursor) }
            count += page.users.count
            guard let next = page.cursor, !next.isEmpty else { break }
            cursor = next
        }
        return count
    }

    /// Runs `call`, again after a short backoff on 429, 503 or a transport error, at most `attempts` times.
    func retrying<Value>(attempts: Int = 5, _ call: () async throws -> Value) async throws -> Value {
        var lastError: any Error = SetupError("no attempt")
        for attempt in 0..<max(attempts, 1) {
            if attempt > 0 { try await Task.sleep(for: .milliseconds(100 * attempt)) }
            do {
                return try await call()
            } catch let error as StatusdError where error.httpStatus != 429 && error.httpStatus != 503 {
                throw error
            } catch {
                lastError = error
            }
        }
        throw lastError
    }
}

/// A set-up step that failed.
struct SetupError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
