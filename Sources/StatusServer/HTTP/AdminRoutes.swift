import Hummingbird
import StatusCore

/// SPEC §7 admin API: apps and their configs, behind the admin key.
struct AdminRoutes: Sendable {
    let services: ServerServices

    /// The body of `POST /v1/apps`.
    struct CreateApp: JSONRequestBody, Sendable {
        static let members: StrictJSON.Members? = StrictJSON.Members(["appId", "config"])
        var appId: String
        var config: JSONValue?
    }

    /// The answer to app creation.
    struct CreatedApp: Encodable, Sendable {
        var appId: String
        var apiKey: String
        var config: AppConfig
    }

    /// An app and its config.
    struct AppView: Encodable, Sendable {
        var appId: String
        var config: AppConfig
    }

    func register(on router: Router<some RequestContext>) {
        let apps = router.group("v1/apps")
        apps.post { request, _ in
            try services.auth.requireAdmin(request)
            let body = try await RequestBody.decode(CreateApp.self, from: request)
            let appId = try Identifiers.appId(body.appId)
            let config = try AppConfigPatch.apply(body.config ?? .object([:]), to: AppConfig())
            let created = try await services.apps.create(appId: appId, config: config)
            // Other nodes may remember the appId as missing: the config message makes them look again.
            await services.bus.publish(.configChanged(appId: appId))
            return JSONResponse(CreatedApp(appId: appId, apiKey: created.apiKey, config: config), status: .created)
        }
        apps.get(":appId") { request, context in
            try services.auth.requireAdmin(request)
            let appId = try Identifiers.appId(pathSegment: context.parameters.require("appId"))
            let record = try await services.apps.require(appId)
            return JSONResponse(AppView(appId: appId, config: record.config))
        }
        apps.patch(":appId/config") { request, context in
            try services.auth.requireAdmin(request)
            let appId = try Identifiers.appId(pathSegment: context.parameters.require("appId"))
            let patch = try await RequestBody.decode(JSONValue.self, from: request)
            let config = try await services.apps.patch(appId, with: patch)
            await services.bus.publish(.configChanged(appId: appId))
            return JSONResponse(config)
        }
        apps.delete(":appId") { request, context in
            try services.auth.requireAdmin(request)
            let appId = try Identifiers.appId(pathSegment: context.parameters.require("appId"))
            try await RequestBody.requireNone(request)
            try await services.apps.delete(appId)
            await services.bus.publish(.deleted(appId: appId, userId: nil))
            return Response(status: .noContent)
        }
    }
}
