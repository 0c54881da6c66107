import Foundation
import StatusCore
import Testing

/// Checks an error response: its HTTP status and the `{"error": {"code", "message"}}` body of SPEC §7.
func expectError(
    _ response: APIResponse,
    _ status: Int,
    _ code: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(response.status == status, "\(response.body)", sourceLocation: sourceLocation)
    #expect(response.body["error"]["code"].string == code, "\(response.body)", sourceLocation: sourceLocation)
    #expect(response.body["error"]["message"].string?.isEmpty == false, "error without a message", sourceLocation: sourceLocation)
}

/// Checks a 200 response and returns its body.
@discardableResult
func expectOK(_ response: APIResponse, _ status: Int = 200, sourceLocation: SourceLocation = #_sourceLocation) -> JSONValue {
    #expect(response.status == status, "\(response.body)", sourceLocation: sourceLocation)
    return response.body
}

/// Sends a request again while it is answered 503 `UNAVAILABLE` (up to three times more, 200 ms apart), as a client does:
/// a refused request changed nothing (SPEC §7). For set-up steps, and for tests whose rule is not about outages that
/// run many requests at once and would otherwise fail on a busy machine where Redis now and then answers past the
/// command deadline.
func retryingUnavailable(_ send: () async throws -> APIResponse) async throws -> APIResponse {
    var response = try await send()
    for _ in 0..<3 where response.status == 503 {
        try await Task.sleep(for: .milliseconds(200))
        response = try await send()
    }
    return response
}

extension APIClient {
    /// Patches this app's config through the admin API; fails the test unless it is accepted.
    @discardableResult
    func patchConfig(_ patch: JSONValue, sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSONValue {
        let response = try await admin(.patch, "/v1/apps/\(appId)/config", patch)
        #expect(response.status == 200, "\(response.body)", sourceLocation: sourceLocation)
        return response.body
    }

    /// Logs a backend-driven device in.
    @discardableResult
    func login(_ userId: String, _ deviceId: String, platform: String = "web") async throws -> APIResponse {
        try await call(.post, "/users/\(userId)/devices/\(deviceId)/login", ["platform": .string(platform)])
    }

    /// Logs a backend-driven device out.
    @discardableResult
    func logout(_ userId: String, _ deviceId: String) async throws -> APIResponse {
        try await call(.post, "/users/\(userId)/devices/\(deviceId)/logout")
    }

    /// Sets a user's custom status (`nil` sends JSON null).
    @discardableResult
    func setStatus(_ userId: String, _ customStatus: String?) async throws -> APIResponse {
        try await call(.put, "/users/\(userId)/status", ["customStatus": customStatus.map(JSONValue.string) ?? .null])
    }

    /// getUserStatus acting for `userId`.
    func query(_ userId: String, _ userIds: [String]) async throws -> APIResponse {
        try await call(.post, "/users/\(userId)/status/query", ["userIds": .array(userIds.map(JSONValue.string))])
    }

    /// The user's own status, through a self query (never limited).
    func ownStatus(_ userId: String) async throws -> JSONValue {
        try await query(userId, [userId]).body["statuses"][0]
    }

    /// The backend's view of one user's status, with devices.
    func backendStatus(_ userId: String) async throws -> JSONValue {
        try await call(.post, "/status/query", ["userIds": [.string(userId)], "detail": true]).body["statuses"][0]
    }

    /// Waits until the node lists `deviceId` among `userId`'s online devices: the connect has run to its end on the
    /// server, however slowly a busy machine got there. For raw sockets, which read nothing and so see no welcome.
    func waitUntilConnected(_ userId: String, deviceId: String, within timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !(try await backendStatus(userId)["onlineDevices"].array.contains { $0["deviceId"].string == deviceId }) {
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "\(deviceId) of \(userId) never connected") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// subscribeUserStatus acting for `userId`.
    func subscribe(_ userId: String, _ userIds: [String]) async throws -> APIResponse {
        try await call(.post, "/users/\(userId)/subscriptions", ["userIds": .array(userIds.map(JSONValue.string))])
    }

    /// unsubscribeUserStatus acting for `userId`; nil sends no body.
    func unsubscribe(_ userId: String, _ userIds: [String]?) async throws -> APIResponse {
        try await call(.delete, "/users/\(userId)/subscriptions", userIds.map { ["userIds": .array($0.map(JSONValue.string))] })
    }

    /// The user's subscriptions, oldest first.
    func subscriptions(_ userId: String) async throws -> [String] {
        try await call(.get, "/users/\(userId)/subscriptions").body["userIds"].strings
    }
}

/// A JSON array of strings.
func ids(_ values: [String]) -> JSONValue {
    .array(values.map(JSONValue.string))
}
