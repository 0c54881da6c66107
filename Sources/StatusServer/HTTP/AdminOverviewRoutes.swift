import Hummingbird
import StatusCore

/// The admin API's read-only overview, for operators and the console: every app, and live counts per app.
struct AdminOverviewRoutes: Sendable {
    let auth: Authenticator
    let apps: AppRegistry
    /// Counts the app's online users, on every node.
    let listings: ListingStore
    /// This node's id, in each app's stats.
    let nodeId: String
    let index: FanoutIndex
    /// The node's wall time, the `at` of an answer.
    let clock: any NodeClock
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
            try auth.requireAdmin(request)
            return JSONResponse(AppList(appIds: try await apps.allAppIds().sorted()))
        }
        router.get("v1/apps/:appId/stats") { request, context in
            try auth.requireAdmin(request)
            let appId = try Identifiers.appId(pathSegment: context.parameters.require("appId"))
            _ = try await apps.require(appId)
            let online = try await listings.onlineCount(appId: appId)
            let counters = activity.snapshot(of: appId)
            let node = NodeStats(
                nodeId: nodeId,
                connectedDevices: index.sessions(ofApp: appId).count,
                eventsDelivered: counters.eventsDelivered,
                rateLimited: counters.rateLimited,
                presenceAccuracy: activity.accuracy.snapshot
            )
            return JSONResponse(AppStats(appId: appId, onlineUsers: online, node: node, at: clock.nowMs))
        }
    }
}
