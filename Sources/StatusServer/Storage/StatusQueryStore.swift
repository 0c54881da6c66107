import RedisClient
import StatusCore

/// The reads of statuses that a call of SPEC §4 makes with its gate: a read of others after the rate limit admitted
/// the call (getUserStatus, subscribeUserStatus; SPEC §5), a read of oneself that counts as activity (SPEC §2), and the
/// subscription marks with the targets' statuses.
///
/// Each is one round trip: the script (`query_rate_limit.lua`, `user_activity.lua`, `subscribe_target.lua`) and the
/// status reads share one pipeline; only users whose status hash has no read copy yet cost a second one
/// (``StatusRepository/completed(_:appId:)``). The operations get typed results and never see a command or a reply.
struct StatusQueryStore: Sendable {
    let runner: ScriptRunner
    let statuses: StatusRepository

    /// What `query_rate_limit.lua` answers for an accepted call.
    typealias Admission = QueryRateLimit.Admission

    /// Counts a call of `operation` by `userId` or throws `RATE_LIMITED` (`USER_NOT_FOUND` for an unknown caller),
    /// and answers the caller's block lists and which of `asked` are their friends. With `readingStatuses`, the
    /// statuses of `asked` as the caller may see them (their friendship and freezes for the caller) are read in the
    /// same round trip and answered too (users without a profile are left out); without, `statuses` is nil. The
    /// reads are sent again with the script when Redis lost it (`NOSCRIPT`): they only read.
    func admit(
        _ operation: RateLimitedOperation,
        appId: String,
        userId: String,
        rateLimit: AppConfig.RateLimit,
        asked: [String],
        readingStatuses: Bool
    ) async throws -> (admission: Admission, statuses: [String: StoredStatus]?) {
        let (reply, replies) = try await runner.run(
            QueryRateLimit.self,
            keys: .init(user: RedisKeys(appId: appId).user(userId), operation: operation),
            arguments: .init(rateLimit: RateLimitArguments(rateLimit), asked: asked),
            then: readingStatuses ? StatusRepository.statusReads(appId: appId, userIds: asked, viewer: userId) : []
        )
        let admission = reply.admission
        guard admission.friends.count == asked.count else {
            throw StatusReplyError(script: "query_rate_limit.lua", problem: "\(admission.friends.count) friend flags for \(asked.count) users")
        }
        guard readingStatuses else { return (admission, nil) }
        let reads = try StatusRepository.stored(userIds: asked, friends: admission.friends, viewer: userId, from: replies)
        return (admission, try await statuses.completed(reads, appId: appId))
    }

    /// The caller's own status (SPEC §4 getUserStatus of oneself, not counted), with the request recorded as activity
    /// while they are online (SPEC §2), in one round trip; nil when the user does not exist.
    func ownStatus(appId: String, userId: String) async throws -> StoredStatus? {
        let (_, replies) = try await runner.run(
            UserActivity.self,
            keys: .init(user: RedisKeys(appId: appId).user(userId)),
            arguments: .init(),
            then: StatusRepository.statusReads(appId: appId, userIds: [userId])
        )
        let reads = try StatusRepository.stored(userIds: [userId], from: replies)
        return try await statuses.completed(reads, appId: appId)[userId]
    }

    /// The targets of a subscription (SPEC §4 subscribeUserStatus), in one round trip: `subscriber` is recorded in the
    /// reverse index of each target that exists (`subscribe_target.lua`), and each target's status is read as
    /// `subscriber` sees it (`friends`: for each target, whether it is the subscriber's friend). Answers the targets
    /// that exist and the statuses read.
    func markTargets(
        appId: String,
        subscriber: String,
        targets: [String],
        friends: [Bool]
    ) async throws -> (existing: Set<String>, statuses: [String: StoredStatus]) {
        guard !targets.isEmpty else { return ([], [:]) }
        let keys = RedisKeys(appId: appId)
        let runner = self.runner
        let marks = try targets.map { target in
            try runner.command(SubscribeTarget.self, keys: .init(target: keys.user(target)), arguments: .init(subscriber: subscriber))
        }
        let replies = try await runner.pipeline(
            marks + StatusRepository.statusReads(appId: appId, userIds: targets, viewer: subscriber),
            loading: [SubscribeTarget.self]
        )
        guard replies.count == 2 * targets.count else { throw StatusReplyError.malformed }
        var existing = Set<String>()
        for (target, reply) in zip(targets, replies) where try ScriptRunner.decode(SubscribeTarget.self, reply).value {
            existing.insert(target)
        }
        let reads = try StatusRepository.stored(userIds: targets, friends: friends, viewer: subscriber, from: replies.dropFirst(targets.count))
        return (existing, try await statuses.completed(reads, appId: appId))
    }
}
