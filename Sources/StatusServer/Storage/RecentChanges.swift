/// The app's users whose status changed lately (SPEC §7 resume, for devices with presence `all` or `roles:`, who hear
/// about users beyond their relationships): a sorted set `st:{appId}:recent`, member = userId, score = when (epoch ms),
/// kept only as long as a resume can look back. A resuming device of such a scope reads these users instead of every
/// user of the app; entries may be a superset (a write that changed nothing), the version times decide.
enum RecentChanges {
    /// How far back a resume can look: a resume point lives `heartbeatTimeoutSeconds`, and its moment may lie two lease
    /// periods (a node that died) and the clock margin before it was written.
    static func keepMs(heartbeatTimeoutSeconds: Int, leaseSeconds: Int) -> Int64 {
        (Int64(heartbeatTimeoutSeconds) + 2 * Int64(leaseSeconds)) * 1000 + 2 * ResumePoint.clockMargin
    }

    /// The most users a resume reads from the log (the latest ones): a bound on the work and the frame of one resume.
    static let readLimit = 10_000

    /// Records that `userId` changed at `nowMs` and trims what is older than `keepMs`; every command touches the app's
    /// key only.
    static func record(appId: String, userId: String, nowMs: Int64, keepMs: Int64) -> [[String]] {
        let key = RedisKeys(appId: appId).recentChanges
        return [
            ["ZADD", key, String(nowMs), userId],
            ["ZREMRANGEBYSCORE", key, "-inf", "(" + String(nowMs - keepMs)],
            ["PEXPIRE", key, String(keepMs)],
        ]
    }

    /// Says that a node holds an `all`/`roles:` session of the app: for `keepMs` from now, setSelfStatus writes the log
    /// (connects and departures always do: they touch the app's slot anyway). Without such sessions the log is not
    /// written by setSelfStatus at all, so an app's status changes do not all meet on the app's one slot
    /// (docs/scaling.md).
    static func markListening(appId: String, keepMs: Int64) -> [String] {
        ["SET", RedisKeys(appId: appId).appWideListeners, "1", "PX", String(keepMs)]
    }

    /// Reads the users changed since `since` (epoch ms), the latest first, at most `limit`.
    static func read(appId: String, since: Int64, limit: Int = readLimit) -> [String] {
        ["ZREVRANGEBYSCORE", RedisKeys(appId: appId).recentChanges, "+inf", String(since), "LIMIT", "0", String(limit)]
    }
}
