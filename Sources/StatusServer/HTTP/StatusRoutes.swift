import Hummingbird
import StatusCore

/// SPEC §7 server API: the four operations acting for a user, the listings, the backend query and backend-driven
/// devices, under `/v1/apps/{appId}`.
struct StatusRoutes: Sendable {
    let auth: Authenticator
    let operations: StatusOperations
    let presence: PresenceOperations
    /// Checks that a user exists before a logout or a kick.
    let users: UserDirectory

    /// The body of `PUT /users/{userId}/status`: a field left out keeps its value (SPEC §4).
    struct SetStatus: JSONRequestBody, Sendable {
        static let members: StrictJSON.Members? = StrictJSON.Members(["customStatus", "availability", "clearAfterSeconds"])
        var customStatus: CustomStatusChange
        /// SPEC §10.1; nil keeps it.
        var availability: Availability?
        /// SPEC §10.2; only with a custom status being set.
        var clearAfterSeconds: Int?

        init(customStatus: CustomStatusChange, availability: Availability? = nil, clearAfterSeconds: Int? = nil) {
            self.customStatus = customStatus
            self.availability = availability
            self.clearAfterSeconds = clearAfterSeconds
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            customStatus = container.contains(.customStatus) ? .set(try container.decodeIfPresent(String.self, forKey: .customStatus)) : .keep
            availability = try SetSelfStatusFields.availability(
                present: container.contains(.availability),
                try container.decodeIfPresent(String.self, forKey: .availability)
            )
            // Present means a number: null is a wrong type, as for availability.
            clearAfterSeconds = container.contains(.clearAfterSeconds) ? try container.decode(Int.self, forKey: .clearAfterSeconds) : nil
        }

        private enum CodingKeys: String, CodingKey {
            case customStatus
            case availability
            case clearAfterSeconds
        }
    }

    /// A `userIds` body that may be absent (unsubscribe).
    struct OptionalUserIds: JSONRequestBody, Sendable {
        static let members: StrictJSON.Members? = StrictJSON.Members(["userIds"])
        var userIds: [String]?
    }

    /// The body of `POST /status/query`.
    struct BackendQuery: JSONRequestBody, Sendable {
        static let members: StrictJSON.Members? = StrictJSON.Members(["userIds", "detail"])
        var userIds: [String]
        var detail: Bool?
    }

    /// The body of a device login; `state` is the device's (SPEC §10.4, `active` when absent).
    struct Login: JSONRequestBody, Sendable {
        static let members: StrictJSON.Members? = StrictJSON.Members(["platform", "state"])
        var platform: String
        var state: DeviceState?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: DeviceStateKey.self)
            platform = try container.decode(String.self, forKey: .platform)
            state = try DeviceStateKey.state(in: container)
        }
    }

    /// The body of a heartbeat, which may be absent: `state` reports the device's (SPEC §10.4, unchanged when absent).
    struct HeartbeatBody: JSONRequestBody, Sendable {
        static let members: StrictJSON.Members? = StrictJSON.Members(["state"])
        var state: DeviceState?

        init(from decoder: any Decoder) throws {
            state = try DeviceStateKey.state(in: try decoder.container(keyedBy: DeviceStateKey.self))
        }
    }

    /// The members of the bodies that carry a device's state.
    enum DeviceStateKey: String, CodingKey {
        case platform
        case state

        /// `state` when present; `null` or an unknown value is `INVALID_REQUEST` (a wrong value, not "left out").
        static func state(in container: KeyedDecodingContainer<DeviceStateKey>) throws -> DeviceState? {
            guard container.contains(.state) else { return nil }
            guard let name = try? container.decode(String.self, forKey: .state) else {
                throw StatusError(.invalidRequest, "state must be one of active, idle, background")
            }
            return try DeviceState.parse(name)
        }
    }

    /// The body of a kick.
    struct Kick: JSONRequestBody, Sendable {
        static let members: StrictJSON.Members? = StrictJSON.Members(["deviceId"])
        var deviceId: String?
    }

    /// The answer to a kick.
    struct Kicked: Encodable, Sendable {
        var kicked: [String]
    }

    func register(on router: Router<some RequestContext>) {
        let app = router.group("v1/apps/:appId")
        // Also answered before the router (``HotRoutes``), by these same handlers.
        app.put("users/:userId/status") { request, context in
            try await setSelfStatus(request, appIdSegment: context.parameters.require("appId"), userIdSegment: context.parameters.require("userId"))
        }
        app.post("users/:userId/status/query") { request, context in
            try await getUserStatus(request, appIdSegment: context.parameters.require("appId"), userIdSegment: context.parameters.require("userId"))
        }
        app.post("users/:userId/subscriptions") { request, context in
            let (app, userId) = try await auth.user(request, context)
            let body = try await RequestBody.decode(UserIdList.self, from: request)
            return JSONResponse(try await operations.subscribe(app: app, userId: userId, userIds: body.userIds))
        }
        app.delete("users/:userId/subscriptions") { request, context in
            let (app, userId) = try await auth.user(request, context)
            let body = try await RequestBody.decodeIfPresent(OptionalUserIds.self, from: request)
            return JSONResponse(try await operations.unsubscribe(app: app, userId: userId, userIds: body?.userIds))
        }
        app.get("users/:userId/subscriptions") { request, context in
            let (app, userId) = try await auth.user(request, context)
            return JSONResponse(UserIdList(userIds: try await operations.subscriptions(appId: app.appId, userId: userId)))
        }
        app.get("users") { request, context in
            let app = try await auth.app(request, context)
            let query = request.uri.queryParameters
            let presence: StatusType?
            switch query.get("status") {
            case nil: presence = nil
            case "online": presence = .online
            case "offline": presence = .offline
            default: throw StatusError(.invalidRequest, "status must be online or offline")
            }
            let limit = try RequestRules.listLimit(query.get("limit"))
            let cursor = query.get("cursor").flatMap { $0.isEmpty ? nil : $0 }
            return JSONResponse(try await operations.listUsers(appId: app.appId, presence: presence, limit: limit, cursor: cursor))
        }
        app.post("status/query") { request, context in
            let app = try await auth.app(request, context)
            let body = try await RequestBody.decode(BackendQuery.self, from: request)
            return EncodedJSONResponse(try await operations.backendQuery(appId: app.appId, userIds: body.userIds, detail: body.detail ?? false))
        }
        registerDevices(on: app)
    }

    /// setSelfStatus (SPEC §4): `PUT /users/{userId}/status`.
    func setSelfStatus(_ request: Request, appIdSegment: String, userIdSegment: String) async throws -> EncodedJSONResponse {
        let (app, userId) = try await auth.user(request, appIdSegment: appIdSegment, userIdSegment: userIdSegment)
        let body = try await RequestBody.decode(SetStatus.self, from: request)
        return EncodedJSONResponse(
            try await operations.setSelfStatus(
                app: app,
                userId: userId,
                customStatus: body.customStatus,
                availability: body.availability,
                clearAfterSeconds: body.clearAfterSeconds
            )
        )
    }

    /// getUserStatus (SPEC §4): `POST /users/{userId}/status/query`.
    func getUserStatus(_ request: Request, appIdSegment: String, userIdSegment: String) async throws -> EncodedJSONResponse {
        let (app, userId) = try await auth.user(request, appIdSegment: appIdSegment, userIdSegment: userIdSegment)
        let body = try await RequestBody.decode(UserIdList.self, from: request)
        return EncodedJSONResponse(try await operations.getUserStatus(app: app, userId: userId, userIds: body.userIds))
    }

    private func registerDevices(on app: RouterGroup<some RequestContext>) {
        app.post("users/:userId/devices/:deviceId/login") { request, context in
            let (app, userId, deviceId) = try await device(request, context)
            let body = try await RequestBody.decode(Login.self, from: request)
            let platform = try Platform.parse(body.platform)
            let state = body.state ?? .active
            let status = try await presence.connect(
                app: app,
                userId: userId,
                deviceId: deviceId,
                platform: platform,
                kind: .backend,
                connection: "api:" + deviceId,
                state: state
            )
            return EncodedJSONResponse(status.status)
        }
        app.post("users/:userId/devices/:deviceId/heartbeat") { request, context in
            let (app, userId, deviceId) = try await device(request, context)
            let body = try await RequestBody.decodeIfPresent(HeartbeatBody.self, from: request)
            let state = body?.state
            return EncodedJSONResponse(try await presence.heartbeat(app: app, userId: userId, deviceId: deviceId, state: state))
        }
        app.post("users/:userId/devices/:deviceId/logout") { request, context in
            let (app, userId, deviceId) = try await device(request, context)
            try await RequestBody.requireNone(request)
            try await users.requireExists(appId: app.appId, userId: userId)
            return EncodedJSONResponse(try await presence.remove(app: app, userId: userId, deviceIds: [deviceId], because: .logout).status)
        }
        app.post("users/:userId/kick") { request, context in
            let (app, userId) = try await auth.user(request, context)
            let body = try await RequestBody.decodeIfPresent(Kick.self, from: request)
            let devices = try body?.deviceId.map { [try Identifiers.deviceId($0)] } ?? []
            try await users.requireExists(appId: app.appId, userId: userId)
            return JSONResponse(Kicked(kicked: try await presence.remove(app: app, userId: userId, deviceIds: devices, because: .kicked).removed))
        }
    }

    private func device(_ request: Request, _ context: some RequestContext) async throws -> (AppRecord, String, String) {
        let (app, userId) = try await auth.user(request, context)
        let deviceId = try Identifiers.deviceId(pathSegment: context.parameters.require("deviceId"))
        return (app, userId, deviceId)
    }
}
