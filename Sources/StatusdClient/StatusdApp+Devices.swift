/// Presence driven by a backend that keeps the connections itself, and kicks (SPEC §7).
extension StatusdApp {
    /// Logs a device in; it is gone after `heartbeatTimeoutSeconds` without ``backendHeartbeat(_:device:)``.
    @discardableResult
    public func backendLogin(_ userId: String, device deviceId: String, platform: Platform) async throws -> UserStatus {
        try await unwrapped {
            try await client.backendLogin(path: .init(appId: appId, userId: userId, deviceId: deviceId), body: .json(.init(platform: platform)))
                .ok.body.json
        }
    }

    @discardableResult
    public func backendHeartbeat(_ userId: String, device deviceId: String) async throws -> UserStatus {
        try await unwrapped { try await client.backendHeartbeat(path: .init(appId: appId, userId: userId, deviceId: deviceId)).ok.body.json }
    }

    @discardableResult
    public func backendLogout(_ userId: String, device deviceId: String) async throws -> UserStatus {
        try await unwrapped { try await client.backendLogout(path: .init(appId: appId, userId: userId, deviceId: deviceId)).ok.body.json }
    }

    /// Closes one device of the user (every device when nil) with a `kicked` event; returns the ids closed.
    @discardableResult
    public func kick(_ userId: String, device deviceId: String? = nil) async throws -> [String] {
        try await unwrapped {
            let body = Components.Schemas.KickRequest(deviceId: deviceId)
            return try await client.kick(path: .init(appId: appId, userId: userId), body: .json(body)).ok.body.json.kicked
        }
    }
}
