import RedisClient

/// The commands of the app's log of recent changes (``RecentChanges``) that are sent on their own, not riding with a
/// status script: an expiry logged by the sweeper, the fan-out's mark of apps with `all`/`roles:` sessions, and a
/// resume's read.
struct RecentChangesLog: Sendable {
    let redis: RedisClient

    /// Logs that `userId` changed at `nowMs`, kept `keepMs` (one pipeline).
    func record(appId: String, userId: String, nowMs: Int64, keepMs: Int64) async throws {
        _ = try await redis.pipeline(RecentChanges.record(appId: appId, userId: userId, nowMs: nowMs, keepMs: keepMs))
    }

    /// Marks each app as listened to app-wide for its `keepMs` from now, all in one pipeline.
    func markListening(_ apps: [(appId: String, keepMs: Int64)]) async throws {
        _ = try await redis.pipeline(apps.map { RecentChanges.markListening(appId: $0.appId, keepMs: $0.keepMs) })
    }

    /// The users of the app changed since `since` (epoch ms), the latest first, at most `limit`.
    func changed(appId: String, since: Int64, limit: Int) async throws -> [String] {
        try await redis.send(RecentChanges.read(appId: appId, since: since, limit: limit)).array?.compactMap(\.string) ?? []
    }
}
