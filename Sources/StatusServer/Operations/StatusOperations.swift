import Foundation
import StatusCore

/// The four operations of SPEC §4 plus the listings, with every gate, quota and rule. Both transports (HTTP server
/// API and device WebSocket) call these, so they share semantics and counters.
struct StatusOperations: Sendable {
    /// The rate-limited reads of statuses, each with its gate in one round trip (the admission, the activity, the
    /// subscription marks).
    let queries: StatusQueryStore
    /// The callers' own subscription sets.
    let subscriptions: SubscriptionStore
    /// The app's user indexes, which listings page through.
    let listings: ListingStore
    let users: UserDirectory
    let statuses: StatusRepository
    let bus: EventBus
    let webhooks: WebhookQueue
    let recorder: ChangeRecorder
    /// The node's time: the wall time custom status expiries count from, the monotonic time of the admission hints.
    let clock: any NodeClock
    /// Which callers this node saw at their rate limit (their calls are admitted before their reads are sent).
    let hints = AdmissionHints()

    /// The backend query's fixed batch limit (SPEC §7 `POST /status/query`).
    static let backendQueryLimit = 500

    /// setSelfStatus: unlimited, any plan; notifies (subscribers, and the webhook's `customStatusChange` and
    /// `availabilityChange`) only when something changed. A custom status left out (``CustomStatusChange/keep``) is
    /// kept, and so is an availability left out (nil): the call then only counts as activity and answers the status
    /// (the caller's own view, SPEC §10.5).
    func setSelfStatus(
        app: AppRecord,
        userId: String,
        customStatus: CustomStatusChange,
        availability: Availability? = nil,
        clearAfterSeconds: Int? = nil
    ) async throws -> UserStatus {
        let value: String?
        switch customStatus {
        case .keep: value = nil
        case .set(let text): value = try RequestRules.customStatus(text, maxBytes: app.config.customStatusMaxBytes)
        }
        let expiresAt = try SetSelfStatusFields.expiresAt(clearAfterSeconds: clearAfterSeconds, customStatus: value, nowMs: clock.nowMs)
        // One round trip: the script stores the values and publishes the change, and the app's log of recent changes
        // is written in the same pipeline while some node holds an `all`/`roles:` session of the app (only they
        // need it); statusType does not move, so the online index is not touched.
        let result = try await statuses.setCustomStatus(
            appId: app.appId,
            userId: userId,
            value: value,
            keep: customStatus == .keep,
            availability: availability,
            expiresAt: expiresAt,
            graceSeconds: app.config.offlineGraceSeconds,
            keepMs: app.logsRecentChanges ? recorder.keepMs(app.config) : nil
        )
        let stored = result.write.reply
        let status = stored.status
        if result.write.change == .status {
            if result.customStatusChanged {
                await webhooks.enqueueCustomStatusChange(
                    app: app,
                    userId: userId,
                    customStatus: status.customStatus,
                    cleared: false,
                    statusType: status.statusType
                )
            }
            if let availability, availability != result.previousAvailability {
                await webhooks.enqueueAvailabilityChange(app: app, userId: userId, availability: availability, statusType: status.statusType)
            }
        }
        return PresenceView.own.status(of: stored.record, appDefault: app.config.lastSeenPrivacy)
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
        var blockVersions: [String: Int64] = [:]
        let found: [String: StoredStatus]
        if ids.contains(where: { $0 != userId }) {
            try app.config.requireStatusQuery()
            guard userIds.count <= app.config.queryBatchLimit else {
                throw StatusError(.tooManyUsers, "at most \(app.config.queryBatchLimit) user ids per call")
            }
            // The reads ride along with the script up to pipelinedQueryLimit ids while the caller has calls left; past
            // it, or for a caller this node saw at the limit, they follow an accepted call (AdmissionHints).
            let pipelined =
                ids.count <= Self.pipelinedQueryLimit
                && !hints.admitFirst(appId: app.appId, userId: userId, operation: .getUserStatus, now: clock.now)
            let (admission, read) = try await admit(.getUserStatus, app: app, userId: userId, asked: ids, readingStatuses: pipelined)
            if let read {
                found = read
            } else {
                found = try await statuses.stored(appId: app.appId, userIds: ids, friends: admission.friends, viewer: userId)
            }
            blocked = admission.blocked
            blockVersions = admission.blockVersions
        } else {
            // Only the caller: not counted, but activity while online (SPEC §2), recorded in the read's round trip;
            // reading their status tells whether they exist.
            guard let own = try await queries.ownStatus(appId: app.appId, userId: userId) else {
                throw StatusError(.userNotFound, "user \(userId) not found")
            }
            found = [userId: own]
        }
        var result = StatusQueryResult(statuses: [], failures: [])
        for id in ids {
            guard let stored = found[id] else {
                result.failures.append(UserFailure(userId: id, code: .userNotFound))
                continue
            }
            result.statuses.append(Self.seen(stored, by: userId, blocked: blocked, blockVersions: blockVersions, config: app.config))
        }
        return result
    }

    /// The most ids whose reads share the rate-limit check's round trip.
    static let pipelinedQueryLimit = 100

    /// What `query_rate_limit.lua` answers for an accepted call (its twin ``QueryRateLimit``).
    typealias QueryAdmission = StatusQueryStore.Admission

    /// subscribeUserStatus: premium + statusQuery, 1...subscribeBatchLimit ids, rate limited; per-id failures; the
    /// earliest subscriptions are evicted past subscriptionLimit in the same atomic step as the add.
    func subscribe(app: AppRecord, userId: String, userIds: [String]) async throws -> SubscribeResult {
        let ids = try Identifiers.userIdList(userIds)
        try app.config.requireStatusQuery()
        _ = try RequestRules.batch(userIds, limit: app.config.subscribeBatchLimit)
        let others = ids.filter { $0 != userId }
        // First the caller's own keys: the rate limit (and that the caller exists), their block lists and friendships;
        // a refused call stops here, before any target is touched (SPEC §10.7).
        let (admission, _) = try await admit(.subscribe, app: app, userId: userId, asked: others, readingStatuses: false)
        // Then, in one round trip, each target's existence with its reverse-index entry, and its status: the version
        // the subscription starts from, and the reply's `statuses`.
        let (existing, found) = try await queries.markTargets(
            appId: app.appId,
            subscriber: userId,
            targets: others,
            friends: admission.friends
        )
        var result = SubscribeResult(subscribed: [], evicted: [], failures: [], statuses: [])
        var since: [String: Int64] = [:]
        for id in ids {
            if id == userId {
                result.failures.append(UserFailure(userId: id, code: .cannotSubscribeSelf))
                continue
            }
            if existing.contains(id), let stored = found[id] {
                result.subscribed.append(id)
                result.statuses.append(
                    Self.seen(stored, by: userId, blocked: admission.blocked, blockVersions: admission.blockVersions, config: app.config)
                )
                // The public version: what the caller is shown of the target, and what a catch-up compares with.
                since[id] = stored.record.publicVersion
            } else {
                result.failures.append(UserFailure(userId: id, code: .userNotFound))
            }
        }
        if !result.subscribed.isEmpty {
            result.evicted = try await subscriptions.subscribe(
                appId: app.appId,
                userId: userId,
                targets: result.subscribed,
                limit: app.config.subscriptionLimit,
                retentionMs: retentionMs(app.config)
            )
        }
        // The nodes of the caller's devices start hearing the new targets when this reaches them; what the targets
        // changed meanwhile is caught up from `since` (FanoutService.catchUp), so no change after this call is lost.
        await bus.publish(.relationsChanged(appId: app.appId, userIds: [userId], since: since))
        return result
    }

    /// A status as `viewer` may see it (SPEC §10.5, ``PresenceView/of(_:seenBy:blocked:isFriend:)``): their own view of
    /// themself; another user's in the block mask where either blocked the other (SPEC §4), with the public version of
    /// when the block began (`blockVersions`, nil when unknown), else the public view with `lastActiveAt` as last-seen
    /// privacy allows.
    static func seen(
        _ stored: StoredStatus,
        by viewer: String,
        blocked: Set<String>,
        blockVersions: [String: Int64] = [:],
        config: AppConfig
    ) -> UserStatus {
        let view = PresenceView.of(
            stored.status.userId,
            seenBy: viewer,
            blocked: BlockedUsers(blocked, publicVersionsAtBlock: blockVersions),
            isFriend: stored.viewerIsFriend ?? false,
            frozen: stored.frozenForViewer
        )
        return stored.viewed(as: view, appDefault: config.lastSeenPrivacy)
    }

    /// Admits a call of a rate-limited operation that reads others (`query_rate_limit.lua`): counts it or throws
    /// `RATE_LIMITED` (or `USER_NOT_FOUND` for an unknown caller), and answers the caller's block lists and which of
    /// `asked` are their friends; with `readingStatuses`, the statuses of `asked` read in the same round trip
    /// (``StatusQueryStore/admit(_:appId:userId:rateLimit:asked:readingStatuses:)``). The outcome feeds
    /// ``AdmissionHints``.
    private func admit(
        _ operation: RateLimitedOperation,
        app: AppRecord,
        userId: String,
        asked: [String],
        readingStatuses: Bool
    ) async throws -> (QueryAdmission, [String: StoredStatus]?) {
        let admission: QueryAdmission
        let read: [String: StoredStatus]?
        do {
            (admission, read) = try await queries.admit(
                operation,
                appId: app.appId,
                userId: userId,
                rateLimit: app.config.rateLimit,
                asked: asked,
                readingStatuses: readingStatuses
            )
        } catch let error as StatusError where error.code == .rateLimited {
            let retry = Duration.milliseconds(error.retryAfterMs ?? 1000)
            hints.record(appId: app.appId, userId: userId, operation: operation, callsLeft: nil, retryAfter: retry, now: clock.now)
            throw error
        }
        let window = Duration.seconds(app.config.rateLimit.windowSeconds)
        hints.record(appId: app.appId, userId: userId, operation: operation, callsLeft: admission.callsLeft, retryAfter: window, now: clock.now)
        return (admission, read)
    }

    /// unsubscribeUserStatus: same gating, batch and rate limit as subscribe; an empty or missing list removes all.
    func unsubscribe(app: AppRecord, userId: String, userIds: [String]?) async throws -> UnsubscribeResult {
        let ids = try Identifiers.userIdList(userIds ?? [])
        try app.config.requireStatusQuery()
        _ = try RequestRules.batch(userIds ?? [], limit: app.config.subscribeBatchLimit, allowEmpty: true)
        try await users.requireExists(appId: app.appId, userId: userId)
        let removed = try await subscriptions.unsubscribe(
            appId: app.appId,
            userId: userId,
            targets: ids,
            rateLimit: app.config.rateLimit,
            retentionMs: retentionMs(app.config)
        )
        await bus.publish(.relationsChanged(appId: app.appId, userIds: [userId]))
        return UnsubscribeResult(unsubscribed: removed)
    }

    /// The user's subscriptions, oldest first; the existence check and the read are one round trip.
    func subscriptions(appId: String, userId: String) async throws -> [String] {
        try await subscriptions.list(appId: appId, userId: userId)
    }

    /// The backend's view of anyone's status: no user rate limit, no gating, no blocking; devices only with `detail`.
    func backendQuery(appId: String, userIds: [String], detail: Bool) async throws -> StatusQueryResult {
        let ids = try RequestRules.batch(userIds, limit: Self.backendQueryLimit)
        let found = try await statuses.stored(appId: appId, userIds: ids)
        var result = StatusQueryResult(statuses: [], failures: [])
        for id in ids {
            if let stored = found[id] {
                let status = stored.viewed(as: .own, appDefault: .everyone)
                result.statuses.append(detail ? status : status.withoutDevices())
            } else {
                result.failures.append(UserFailure(userId: id, code: .userNotFound))
            }
        }
        return result
    }

    /// Users by presence (`online`, `offline` = not online, or nil for everyone), in id order, one page at a time.
    ///
    /// Bounded work (SPEC §10.7): a page examines at most ``listingBudget(limit:)`` users, whatever the app's size. When
    /// the filter skips many (an `offline` listing of an app where nearly everyone is online), the page can hold fewer
    /// than `limit` users, even none, with a cursor to go on from: the listing is over only when the cursor is null.
    func listUsers(appId: String, presence: StatusType?, limit: Int, cursor: String?) async throws -> UserPage {
        var after = try cursor.map(ListCursor.decode)
        let source: ListingStore.Index = presence == .online ? .online : .users
        var page: [StatusQueryResult.Entry] = []
        var exhausted = false
        var examined = 0
        let budget = Self.listingBudget(limit: limit)
        while page.count < limit && !exhausted && examined < budget {
            let batch = min(200, limit * 2, budget - examined)
            let candidates = try await listings.page(appId: appId, source, after: after, limit: batch)
            exhausted = candidates.count < batch
            let found = try await statuses.stored(appId: appId, userIds: candidates)
            for id in candidates {
                after = id
                examined += 1
                guard let stored = found[id] else { continue }
                let matches = presence == nil || (presence == .online) == (stored.status.statusType == .online)
                if matches { page.append(StatusQueryResult.Entry(userId: id, status: stored.viewed(as: .own, appDefault: .everyone))) }
                if page.count == limit {
                    exhausted = exhausted && id == candidates.last
                    break
                }
            }
        }
        // Profiles only of the users listed.
        let profiles = try await users.profiles(appId: appId, userIds: page.map(\.userId))
        return UserPage(
            users: page.map { ListedUser(status: $0.status, profile: profiles[$0.userId]) },
            cursor: exhausted ? nil : after.map(ListCursor.encode)
        )
    }

    /// The most users one listing page examines: four times its `limit`, and at least 100.
    static func listingBudget(limit: Int) -> Int { max(100, limit * 4) }

    private func retentionMs(_ config: AppConfig) -> Int64 {
        Int64(config.subscriptionRetentionSeconds) * 1000
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
