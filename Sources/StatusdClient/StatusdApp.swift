import Foundation

/// The server API of one app (SPEC §7), with its API key: what an app's backend calls, acting for its users through
/// the path. The methods carry the names of the document's operations.
public struct StatusdApp: Sendable {
    public let appId: String
    let client: Client

    public init(_ endpoint: StatusdEndpoint, appId: String, apiKey: String) {
        self.appId = appId
        client = endpoint.client(key: apiKey)
    }

    /// Creates or updates a user's profile.
    @discardableResult
    public func putUser(_ userId: String, profile: UserProfileInput = .init()) async throws -> UserProfile {
        try await unwrapped { try await client.putUser(path: .init(appId: appId, userId: userId), body: .json(profile)).ok.body.json }
    }

    public func getUser(_ userId: String) async throws -> UserProfile {
        try await unwrapped { try await client.getUser(path: .init(appId: appId, userId: userId)).ok.body.json }
    }

    /// Deletes a user: their tokens stop working and every subscription to them goes.
    public func deleteUser(_ userId: String) async throws {
        try await unwrapped { _ = try await client.deleteUser(path: .init(appId: appId, userId: userId)).noContent }
    }

    /// A user token for the device WebSocket (an HS256 JWT), valid `ttlSeconds` (the server's default when nil).
    public func mintToken(for userId: String, ttlSeconds: Int? = nil) async throws -> MintedToken {
        try await unwrapped {
            let body = Components.Schemas.TokenRequest(ttlSeconds: ttlSeconds)
            return try await client.mintToken(path: .init(appId: appId, userId: userId), body: .json(body)).ok.body.json
        }
    }

    /// One page of the app's users by presence (`online`, or `offline` for everyone else), with their profiles;
    /// the page's `cursor` asks for the next one and is nil at the end.
    public func listUsers(
        status: PresenceFilter? = nil,
        limit: Int? = nil,
        cursor: String? = nil
    ) async throws
        -> UserPage
    {
        try await unwrapped {
            try await client.listUsers(path: .init(appId: appId), query: .init(status: status, limit: limit, cursor: cursor)).ok.body.json
        }
    }
}
