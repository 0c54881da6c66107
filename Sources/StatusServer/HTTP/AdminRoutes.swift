import Hummingbird
import StatusCore

/// SPEC §7 admin API: apps and their configs, behind the admin key.
struct AdminRoutes: Sendable {
    let auth: Authenticator
    let apps: AppRegistry
    /// Tells other nodes that an app's config changed or the app went.
    let bus: EventBus

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
        let routes = router.group("v1/apps")
        routes.post { request, _ in
            try auth.requireAdmin(request)
            let body = try await RequestBody.decode(CreateApp.self, from: request)
            let appId = try Identifiers.appId(body.appId)
            let config = try AppConfigPatch.apply(body.config ?? .object([:]), to: AppConfig())
            let created = try await apps.create(appId: appId, config: config)
            // Other nodes may remember the appId as missing: the config message makes them look again.
            await bus.publish(.configChanged(appId: appId))
            return JSONResponse(CreatedApp(appId: appId, apiKey: created.apiKey, config: config), status: .created)
        }
        routes.get(":appId") { request, context in
            try auth.requireAdmin(request)
            let appId = try Identifiers.appId(pathSegment: context.parameters.require("appId"))
            let record = try await apps.require(appId)
            return JSONResponse(AppView(appId: appId, config: record.config))
        }
        routes.patch(":appId/config") { request, context in
            try auth.requireAdmin(request)
            let appId = try Identifiers.appId(pathSegment: context.parameters.require("appId"))
            let patch = try await RequestBody.decode(JSONValue.self, from: request)
            let config = try await apps.patch(appId, with: patch)
            await bus.publish(.configChanged(appId: appId))
            return JSONResponse(config)
        }
        routes.delete(":appId") { request, context in
            try auth.requireAdmin(request)
            let appId = try Identifiers.appId(pathSegment: context.parameters.require("appId"))
            try await RequestBody.requireNone(request)
            try await apps.delete(appId)
            await bus.publish(.deleted(appId: appId, userId: nil))
            return Response(status: .noContent)
        }
    }
}
