import Foundation

/// The admin API (SPEC §7), with the admin key given to statusd at start.
public struct StatusdAdmin: Sendable {
    let client: Client

    public init(_ endpoint: StatusdEndpoint, adminKey: String) {
        client = endpoint.client(key: adminKey)
    }

    /// Creates an app; its API key is shown only in this answer. `APP_EXISTS` (409) if the id is taken.
    public func createApp(_ appId: String, config: AppConfigPatch? = nil) async throws -> CreatedApp {
        try await unwrapped {
            let body = Components.Schemas.CreateAppRequest(appId: appId, config: config)
            return try await client.createApp(body: .json(body)).created.body.json
        }
    }

    /// Every appId, sorted.
    public func listApps() async throws -> [String] {
        try await unwrapped { try await client.listApps().ok.body.json.appIds }
    }

    public func getApp(_ appId: String) async throws -> AppView {
        try await unwrapped { try await client.getApp(path: .init(appId: appId)).ok.body.json }
    }

    /// Changes the given flags; returns the full config after the change.
    public func patchAppConfig(_ appId: String, _ patch: AppConfigPatch) async throws -> AppConfig {
        try await unwrapped { try await client.patchAppConfig(path: .init(appId: appId), body: .json(patch)).ok.body.json }
    }

    public func getAppStats(_ appId: String) async throws -> AppStats {
        try await unwrapped { try await client.getAppStats(path: .init(appId: appId)).ok.body.json }
    }

    /// Deletes the app and all its data.
    public func deleteApp(_ appId: String) async throws {
        try await unwrapped { _ = try await client.deleteApp(path: .init(appId: appId)).noContent }
    }
}
