import Hummingbird
import StatusCore

/// SPEC §7 server API: users, tokens, friends and blocks, under `/v1/apps/{appId}`.
struct UserRoutes: Sendable {
    let auth: Authenticator
    let users: UserDirectory
    /// Reads the versions a new friendship starts from.
    let statuses: StatusRepository
    /// Removes a deleted user's devices.
    let presence: PresenceOperations
    let tokens: TokenService
    let bus: EventBus

    /// The body of `POST /users/{userId}/tokens`.
    struct TokenRequest: JSONRequestBody, Sendable {
        static let members: StrictJSON.Members? = StrictJSON.Members(["ttlSeconds"])
        var ttlSeconds: Int?
    }

    /// `{"byMe": [...], "me": [...]}`, with only the requested lists.
    struct BlockLists: Encodable, Sendable {
        var byMe: [String]?
        var me: [String]?
    }

    func register(on router: Router<some RequestContext>) {
        let routes = router.group("v1/apps/:appId/users")
        routes.put(":userId") { request, context in
            let (app, userId) = try await auth.user(request, context)
            let input = try await RequestBody.decode(UserProfileInput.self, from: request).validated()
            return JSONResponse(try await users.put(appId: app.appId, userId: userId, input: input))
        }
        routes.get(":userId") { request, context in
            let (app, userId) = try await auth.user(request, context)
            return JSONResponse(try await users.require(appId: app.appId, userId: userId))
        }
        routes.delete(":userId") { request, context in
            let (app, userId) = try await auth.user(request, context)
            try await RequestBody.requireNone(request)
            try await users.requireDeletable(appId: app.appId, userId: userId)
            // The profile goes first: a node auditing the user's devices meanwhile (after a bus gap) finds the user
            // gone, and closes them as deleted, as the devices removed next are told.
            try await users.deleteProfile(appId: app.appId, userId: userId)
            try await presence.remove(app: app, userId: userId, deviceIds: [], because: .deleted)
            let related = try await users.delete(appId: app.appId, userId: userId)
            await bus.publish(.relationsChanged(appId: app.appId, userIds: Array(related)))
            await bus.publish(.deleted(appId: app.appId, userId: userId))
            return Response(status: .noContent)
        }
        routes.post(":userId/tokens") { request, context in
            let (app, userId) = try await auth.user(request, context)
            try await users.requireExists(appId: app.appId, userId: userId)
            let body = try await RequestBody.decodeIfPresent(TokenRequest.self, from: request)
            let ttl = body?.ttlSeconds ?? 86_400
            guard (1...31_536_000).contains(ttl) else { throw StatusError(.invalidRequest, "ttlSeconds must be 1..31536000") }
            return JSONResponse(try await tokens.mint(app: app, userId: userId, ttlSeconds: ttl))
        }
        registerRelations(on: routes)
    }

    private func registerRelations(on routes: RouterGroup<some RequestContext>) {
        routes.put(":userId/friends") { request, context in
            let (app, userId, others) = try await relationRequest(request, context)
            // Where each side starts hearing the other from: what moves before their nodes listen is caught up.
            let versions = try await statuses.versions(appId: app.appId, userIds: [userId] + others)
            try await users.addFriends(appId: app.appId, userId: userId, friendIds: others)
            await bus.publish(.relationsChanged(appId: app.appId, userIds: [userId], since: versions.filter { $0.key != userId }))
            await bus.publish(.relationsChanged(appId: app.appId, userIds: others, since: versions.filter { $0.key == userId }))
            return JSONResponse(UserIdList(userIds: try await users.friends(appId: app.appId, userId: userId)))
        }
        routes.delete(":userId/friends") { request, context in
            let (app, userId, others) = try await relationRequest(request, context, mustExist: false)
            try await users.removeFriends(appId: app.appId, userId: userId, friendIds: others)
            await bus.publish(.relationsChanged(appId: app.appId, userIds: [userId] + others))
            return JSONResponse(UserIdList(userIds: try await users.friends(appId: app.appId, userId: userId)))
        }
        routes.get(":userId/friends") { request, context in
            let (app, userId) = try await auth.user(request, context)
            return JSONResponse(UserIdList(userIds: try await users.requireFriends(appId: app.appId, userId: userId)))
        }
        routes.put(":userId/blocks") { request, context in
            let (app, userId, others) = try await relationRequest(request, context)
            try await users.addBlocks(appId: app.appId, userId: userId, targetIds: others)
            await bus.publish(.relationsChanged(appId: app.appId, userIds: [userId] + others))
            let lists = try await users.blocks(appId: app.appId, userId: userId)
            return JSONResponse(BlockLists(byMe: lists.byMe, me: lists.me))
        }
        routes.delete(":userId/blocks") { request, context in
            let (app, userId, others) = try await relationRequest(request, context, mustExist: false)
            try await users.removeBlocks(appId: app.appId, userId: userId, targetIds: others)
            await bus.publish(.relationsChanged(appId: app.appId, userIds: [userId] + others))
            let lists = try await users.blocks(appId: app.appId, userId: userId)
            return JSONResponse(BlockLists(byMe: lists.byMe, me: lists.me))
        }
        routes.get(":userId/blocks") { request, context in
            let (app, userId) = try await auth.user(request, context)
            try await users.requireExists(appId: app.appId, userId: userId)
            let direction = request.uri.queryParameters.get("direction") ?? "both"
            guard ["byMe", "me", "both"].contains(direction) else {
                throw StatusError(.invalidRequest, "direction must be byMe, me or both")
            }
            let lists = try await users.blocks(appId: app.appId, userId: userId)
            return JSONResponse(BlockLists(byMe: direction == "me" ? nil : lists.byMe, me: direction == "byMe" ? nil : lists.me))
        }
    }

    /// Parses a friends/blocks change: `{"userIds": [...]}`, valid ids, not oneself, the user exists and (when adding)
    /// every other user exists, or nothing changes.
    private func relationRequest(
        _ request: Request,
        _ context: some RequestContext,
        mustExist: Bool = true
    ) async throws -> (AppRecord, String, [String]) {
        let (app, userId) = try await auth.user(request, context)
        let body = try await RequestBody.decode(UserIdList.self, from: request)
        let others = try RequestRules.batch(body.userIds, limit: StatusOperations.backendQueryLimit)
        if others.contains(userId) { throw StatusError(.invalidRequest, "a user cannot befriend or block themselves") }
        let existing = try await users.existing(appId: app.appId, userIds: [userId] + (mustExist ? others : []))
        guard existing.contains(userId) else { throw StatusError(.userNotFound, "user \(userId) not found") }
        if mustExist, let missing = others.first(where: { !existing.contains($0) }) {
            throw StatusError(.userNotFound, "user \(missing) not found")
        }
        return (app, userId, others)
    }
}
