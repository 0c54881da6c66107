import Hummingbird
import StatusCore

/// The admin API's read-only overview, for operators and the console: every app, and live counts per app.
struct AdminOverviewRoutes: Sendable {
    let services: ServerServices
    let index: FanoutIndex
    let activity: AppActivity

    /// `GET /v1/apps`: the appIds, sorted.
    struct AppList: Encodable, Sendable {
        var appIds: [String]
    }

    /// `GET /v1/apps/{appId}/stats`.
    struct AppStats: Encodable, Sendable {
        var appId: String
        /// Users of the app online now, on every node (from Redis).
        var onlineUsers: Int
        /// What the answering node sees of the app; with several nodes each serves its own share of the devices.
        var node: NodeStats
        /// When the numbers were read, epoch ms: two readings give rates (events/s, refusals/s).
        var at: Int64
    }

    /// One node's counts for an app.
    struct NodeStats: Encodable, Sendable {
        var nodeId: String
        /// WebSocket devices of the app connected to this node.
        var connectedDevices: Int
        /// Events written to the app's devices by this node since it started.
        var eventsDelivered: Int
        /// Calls of the app's users refused with `RATE_LIMITED` by this node since it started.
        var rateLimited: Int
        /// The node's presence accuracy, all apps together (``PresenceAccuracy``).
        var presenceAccuracy: PresenceAccuracy.Snapshot
    }

    func register(on router: Router<some RequestContext>) {
        router.get("v1/apps") { request, _ in
            try services.auth.requireAdmin(request)
            return JSONResponse(AppList(appIds: try await services.apps.allAppIds().sorted()))
        }
        router.get("v1/apps/:appId/stats") { request, context in
            try services.auth.requireAdmin(request)
            let appId = try Identifiers.appId(pathSegment: context.parameters.require("appId"))
            _ = try await services.apps.require(appId)
            let online = Int(try await services.redis.send("ZCARD", RedisKeys(appId: appId).online).int ?? 0)
            let counters = activity.snapshot(of: appId)
            let node = NodeStats(
                nodeId: services.configuration.nodeId,
                connectedDevices: index.sessions(ofApp: appId).count,
                eventsDelivered: counters.eventsDelivered,
                rateLimited: counters.rateLimited,
                presenceAccuracy: activity.accuracy.snapshot
            )
            return JSONResponse(AppStats(appId: appId, onlineUsers: online, node: node, at: services.clock.nowMs))
        }
    }
}
