import RedisClient
import StatusCore

/// A user's subscriptions (SPEC §4 subscribeUserStatus, unsubscribeUserStatus; SPEC §7 the list): the caller's own
/// sorted set of targets, oldest first, changed by `subscribe.lua` and `unsubscribe.lua` in one atomic step with the
/// evictions, the retention and (for unsubscribe) the rate limit. The targets' reverse indexes are marked first, by
/// ``StatusQueryStore/markTargets(appId:subscriber:targets:friends:)``.
struct SubscriptionStore: Sendable {
    let runner: ScriptRunner
    let users: UserDirectory

    /// Adds `targets` to the user's subscriptions, evicting the earliest past `limit`; answers the evicted targets.
    func subscribe(appId: String, userId: String, targets: [String], limit: Int, retentionMs: Int64) async throws -> [String] {
        try await runner.run(
            Subscribe.self,
            keys: .init(user: RedisKeys(appId: appId).user(userId)),
            arguments: .init(limit: limit, retentionMs: retentionMs, targets: targets)
        ).evicted
    }

    /// Counts the call against `rateLimit` (or throws `RATE_LIMITED`) and removes `targets` from the user's
    /// subscriptions, all of them when `targets` is empty; answers the targets removed.
    func unsubscribe(
        appId: String,
        userId: String,
        targets: [String],
        rateLimit: AppConfig.RateLimit,
        retentionMs: Int64
    ) async throws -> [String] {
        try await runner.run(
            Unsubscribe.self,
            keys: .init(user: RedisKeys(appId: appId).user(userId)),
            arguments: .init(rateLimit: RateLimitArguments(rateLimit), retentionMs: retentionMs, targets: targets)
        ).removed
    }

    /// The user's subscriptions, oldest first; throws `USER_NOT_FOUND` for an unknown user. The existence check and
    /// the read are one round trip.
    func list(appId: String, userId: String) async throws -> [String] {
        let reply = try await users.requireExists(
            appId: appId,
            userId: userId,
            thenRead: ["ZRANGE", RedisKeys(appId: appId).user(userId).subscriptions, "0", "-1"]
        )
        return reply.array?.compactMap(\.string) ?? []
    }
}
