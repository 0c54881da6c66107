import Foundation
import RedisClient
import StatusCore

/// The four operations of SPEC §4 plus the listings, with every gate, quota and rule. Both transports (HTTP server
/// API and device WebSocket) call these, so they share semantics and counters.
struct StatusOperations: Sendable {
    let redis: RedisClient
    let scripts: ScriptLibrary
    let users: UserDirectory
    let statuses: StatusRepository
    let bus: EventBus
    let webhooks: WebhookQueue
    let recorder: ChangeRecorder

    /// The backend query's fixed batch limit (SPEC §7 `POST /status/query`).
    static let backendQueryLimit = 500

    /// setSelfStatus: unlimited, any plan; notifies (subscribers, and the webhook's `customStatusChange`) only when
    /// something changed. A custom status left out (``CustomStatusChange/keep``) is kept: the call then only counts as
    /// activity and answers the status.
    func setSelfStatus(app: AppRecord, userId: String, customStatus: CustomStatusChange) async throws -> UserStatus {
        let value: String?
        switch customStatus {
        case .keep: value = nil
        case .set(let text): value = try RequestRules.customStatus(text, maxBytes: app.config.customStatusMaxBytes)
        }
        // One round trip: the script stores the value and publishes the change, and the app's log of recent changes
        // is written in the same pipeline while some node holds an `all`/`roles:` session of the app (only they
        // need it); statusType does not move, so the online index is not touched.
        let result = try await statuses.setCustomStatus(
            appId: app.appId,
            userId: userId,
            value: value,
            keep: customStatus == .keep,
            keepMs: app.logsRecentChanges ? recorder.keepMs(app.config) : nil
        )
        let status = result.reply.status
        if result.change == .status {
            await webhooks.enqueueCustomStatusChange(
                app: app,
                userId: userId,
                customStatus: status.customStatus,
                cleared: false,
                statusType: status.statusType
            )
        }
        return status
    }

    /// getUserStatus: free for oneself; for others premium + statusQuery, batch limit and rate limit; blocked pairs
    /// see each other offline; another user's `lastActiveAt` only where their last-seen privacy lets the caller see it.
    ///
    /// One round trip: the rate-limit script (which also checks that the caller exists and returns their block lists
    /// and which of the asked users are their friends) and the status reads share one pipeline. Past
    /// ``pipelinedQueryLimit`` ids the script runs first, alone, so that a call the rate limit turns away never costs
    /// the reads it would have made (SPEC §5 limits the costly calls).
    func getUserStatus(app: AppRecord, userId: String, userIds: [String]) async throws -> StatusQueryResult {
        if userIds.isEmpty { throw StatusError(.invalidRequest, "userIds must not be empty") }
        let ids = try Identifiers.userIdList(userIds)
        var blocked = Set<String>()
        let found: [String: StoredStatus]
        if ids.contains(where: { $0 != userId }) {
            try app.config.requireStatusQuery()
            guard userIds.count <= app.config.queryBatchLimit else {
                throw StatusError(.tooManyUsers, "at most \(app.config.queryBatchLimit) user ids per call")
            }
            let user = RedisKeys(appId: app.appId).user(userId)
            let keys = [user.rateLimit(.getUserStatus), user.status, user.blocks, user.blockedBy, user.profile, user.friends]
            let arguments = rateArguments(app.config) + ids
            // The reads ride along with the script up to pipelinedQueryLimit ids; past it they follow an accepted call.
            let pipelined = ids.count <= Self.pipelinedQueryLimit
            let replies = try await redis.pipeline(
                script: scripts.queryRateLimit,
                keys: keys,
                arguments: arguments,
                then: pipelined ? StatusRepository.statusReads(appId: app.appId, userIds: ids) : []
            )
            let admission = try QueryAdmission(try Self.admitted(replies[0]), asked: ids.count)
            if pipelined {
                found = try await statuses.completed(
                    StatusRepository.stored(userIds: ids, friends: admission.friends, from: replies.dropFirst()),
                    appId: app.appId
                )
            } else {
                found = try await statuses.stored(appId: app.appId, userIds: ids, friends: admission.friends)
            }
            blocked = admission.blocked
        } else {
            // Only the caller: not counted, and reading their status tells whether they exist.
            found = try await statuses.stored(appId: app.appId, userIds: ids)
            guard found[userId] != nil else { throw StatusError(.userNotFound, "user \(userId) not found") }
        }
        var result = StatusQueryResult(statuses: [], failures: [])
        for id in ids {
            guard let stored = found[id] else {
                result.failures.append(UserFailure(userId: id, code: .userNotFound))
                continue
            }
            if blocked.contains(id) {
                result.statuses.append(stored.status.maskedByBlock())
            } else {
                let viewer: LastSeenPrivacy.Viewer = id == userId ? .privileged : .other(isFriend: stored.viewerIsFriend ?? false)
                result.statuses.append(stored.viewed(by: viewer, appDefault: app.config.lastSeenPrivacy))
            }
        }
        return result
    }

    /// The most ids whose reads share the rate-limit check's round trip.
    static let pipelinedQueryLimit = 100

    /// What `query_rate_limit.lua` answers for an accepted call, after its leading 0: the count of blocked users, those
    /// users (either way of blocking), then one flag per asked user, 1 when they are the caller's friend.
    struct QueryAdmission: Equatable {
        var blocked: Set<String>
        var friends: [Bool]
    }

    /// subscribeUserStatus: premium + statusQuery, 1...subscribeBatchLimit ids, rate limited; per-id failures; the
    /// earliest subscriptions are evicted past subscriptionLimit in the same atomic step as the add.
    func subscribe(app: AppRecord, userId: String, userIds: [String]) async throws -> SubscribeResult {
        let ids = try Identifiers.userIdList(userIds)
        try app.config.requireStatusQuery()
        _ = try RequestRules.batch(userIds, limit: app.config.subscribeBatchLimit)
        let existing = try await users.existing(appId: app.appId, userIds: [userId] + ids)
        guard existing.contains(userId) else { throw StatusError(.userNotFound, "user \(userId) not found") }
        var result = SubscribeResult(subscribed: [], evicted: [], failures: [])
        for id in ids {
            if id == userId {
                result.failures.append(UserFailure(userId: id, code: .cannotSubscribeSelf))
            } else if !existing.contains(id) {
                result.failures.append(UserFailure(userId: id, code: .userNotFound))
            } else {
                result.subscribed.append(id)
            }
        }
        try await users.addSubscriber(appId: app.appId, subscriberId: userId, targetIds: result.subscribed)
        let user = RedisKeys(appId: app.appId).user(userId)
        let config = app.config
        let reply = try await rateLimited(
            scripts.subscribe,
            keys: [user.subscriptions, user.rateLimit(.subscribe), user.status],
            arguments: rateArguments(config) + [String(config.subscriptionLimit), retentionMs(config)] + result.subscribed
        )
        result.evicted = reply.compactMap(\.string)
        await bus.publish(.relationsChanged(appId: app.appId, userIds: [userId]))
        return result
    }

    /// unsubscribeUserStatus: same gating, batch and rate limit as subscribe; an empty or missing list removes all.
    func unsubscribe(app: AppRecord, userId: String, userIds: [String]?) async throws -> UnsubscribeResult {
        let ids = try Identifiers.userIdList(userIds ?? [])
        try app.config.requireStatusQuery()
        _ = try RequestRules.batch(userIds ?? [], limit: app.config.subscribeBatchLimit, allowEmpty: true)
        try await users.requireExists(appId: app.appId, userId: userId)
        let user = RedisKeys(appId: app.appId).user(userId)
        let reply = try await rateLimited(
            scripts.unsubscribe,
            keys: [user.subscriptions, user.rateLimit(.unsubscribe), user.status],
            arguments: rateArguments(app.config) + [retentionMs(app.config)] + ids
        )
        await bus.publish(.relationsChanged(appId: app.appId, userIds: [userId]))
        return UnsubscribeResult(unsubscribed: reply.compactMap(\.string))
    }

    /// The user's subscriptions, oldest first; the existence check and the read are one round trip.
    func subscriptions(appId: String, userId: String) async throws -> [String] {
        let reply = try await users.requireExists(
            appId: appId,
            userId: userId,
            thenRead: ["ZRANGE", RedisKeys(appId: appId).user(userId).subscriptions, "0", "-1"]
        )
        return reply.array?.compactMap(\.string) ?? []
    }

    /// The backend's view of anyone's status: no user rate limit, no gating, no blocking; devices only with `detail`.
    func backendQuery(appId: String, userIds: [String], detail: Bool) async throws -> StatusQueryResult {
        let ids = try RequestRules.batch(userIds, limit: Self.backendQueryLimit)
        let found = try await statuses.statuses(appId: appId, userIds: ids)
        var result = StatusQueryResult(statuses: [], failures: [])
        for id in ids {
            if let status = found[id] {
                result.statuses.append(detail ? status : status.withoutDevices())
            } else {
                result.failures.append(UserFailure(userId: id, code: .userNotFound))
            }
        }
        return result
    }

    /// Users by presence (`online`, `offline` = not online, or nil for everyone), in id order, one page at a time.
    func listUsers(appId: String, presence: StatusType?, limit: Int, cursor: String?) async throws -> UserPage {
        var after = try cursor.map(ListCursor.decode)
        let keys = RedisKeys(appId: appId)
        let source = presence == .online ? keys.online : keys.users
        var page: [ListedUser] = []
        var exhausted = false
        let batch = min(200, limit * 2)
        while page.count < limit && !exhausted {
            let start = after.map { "(" + $0 } ?? "-"
            let reply = try await redis.send("ZRANGEBYLEX", source, start, "+", "LIMIT", "0", String(batch))
            let candidates = reply.array?.compactMap(\.string) ?? []
            exhausted = candidates.count < batch
            let found = try await statuses.statuses(appId: appId, userIds: candidates)
            let profiles = try await users.profiles(appId: appId, userIds: candidates)
            for id in candidates {
                after = id
                guard let status = found[id] else { continue }
                let matches = presence == nil || (presence == .online) == (status.statusType == .online)
                if matches { page.append(ListedUser(status: status, profile: profiles[id])) }
                if page.count == limit {
                    exhausted = exhausted && id == candidates.last
                    break
                }
            }
        }
        return UserPage(users: page, cursor: exhausted ? nil : after.map(ListCursor.encode))
    }

    private func rateArguments(_ config: AppConfig) -> [String] {
        [String(config.rateLimit.calls), String(Int64(config.rateLimit.windowSeconds) * 1000)]
    }

    private func retentionMs(_ config: AppConfig) -> String {
        String(Int64(config.subscriptionRetentionSeconds) * 1000)
    }

    /// Runs a rate-limited script: `{0, values...}` is accepted, `{1, retryAfterMs}` becomes `RATE_LIMITED`.
    private func rateLimited(_ script: RedisScript, keys: [String], arguments: [String]) async throws -> [RedisValue] {
        try Self.admitted(try await redis.evalScript(script, keys: keys, arguments: arguments))
    }

    /// A rate-limited script's reply: the values after the `0` of an accepted call; `{1, retryAfterMs}` is thrown as
    /// `RATE_LIMITED` and the script's `USER_NOT_FOUND` error as `USER_NOT_FOUND`.
    private static func admitted(_ value: RedisValue) throws -> [RedisValue] {
        if case .error(let message) = value {
            if message.contains("USER_NOT_FOUND") { throw StatusError(.userNotFound, "user not found") }
            throw RedisClientError(kind: .server, message: message)
        }
        let reply = value.array ?? []
        guard let flag = reply.first?.int else { throw StatusReplyError.malformed }
        if flag == 1 {
            let retry = reply.count > 1 ? reply[1].int ?? 1000 : 1000
            throw StatusError(.rateLimited, "too many calls, retry in \(retry) ms", retryAfterMs: retry)
        }
        return Array(reply.dropFirst())
    }
}

/// The opaque listing cursor: the last user id examined, base64url.
enum ListCursor {
    static func encode(_ userId: String) -> String {
        Data(userId.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ cursor: String) throws(StatusError) -> String {
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let userId = String(data: data, encoding: .utf8), Identifiers.isValidUserId(userId)
        else { throw StatusError(.invalidRequest, "invalid cursor") }
        return userId
    }
}

extension StatusOperations.QueryAdmission {
    /// Reads the reply that ``StatusOperations`` `admitted` left, refusing one whose counts do not add up.
    init(_ reply: [RedisValue], asked: Int) throws {
        guard let wide = reply.first?.int, wide >= 0, wide < reply.count, reply.count == 1 + Int(wide) + asked else {
            throw StatusReplyError.malformed
        }
        let count = Int(wide)
        blocked = Set(reply[1..<(1 + count)].compactMap(\.string))
        friends = reply[(1 + count)...].map { $0 == .integer(1) }
    }
}
