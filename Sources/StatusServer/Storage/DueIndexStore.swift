import RedisClient

/// The due-time indexes of ``DueIndexSweep`` (custom status expiries, offline graces): per app a sorted set of userIds
/// scored by when they fall due, beside it the leases of the entries being handled, and a set listing the apps that
/// have one. Taking and finishing entries are scripts (`due_take.lua`, `due_done.lua`); the rest are single commands.
struct DueIndexStore: Sendable {
    let runner: ScriptRunner

    private var redis: RedisClient { runner.redis }

    /// The apps listed in `apps`.
    func apps(in apps: String) async throws -> [String] {
        try await redis.send("SMEMBERS", apps).array?.compactMap(\.string) ?? []
    }

    /// Drops `appId` from `apps` once its index `key` is gone (the app was deleted, its keys with it).
    func forgetIfGone(_ appId: String, in apps: String, index key: String) async throws {
        if try await redis.send("EXISTS", key).int == 0 { _ = try await redis.send("SREM", apps, appId) }
    }

    /// Leases to this node, for `leaseMs` of Redis's clock, up to `limit` entries of `keys` due at `nowMs` (or earlier,
    /// by Redis's clock): when the leases end, and each entry's userId and due time as written.
    func take(_ keys: DueIndexKeys, nowMs: Int64, leaseMs: Int64, limit: Int) async throws -> DueTake.Reply {
        try await runner.run(DueTake.self, keys: keys, arguments: .init(nowMs: nowMs, leaseMs: leaseMs, limit: limit))
    }

    /// Ends this node's leases (at `leaseScore`) of `entries`, putting back at its time (epoch ms) each entry that has
    /// one, unless an earlier one was written meanwhile.
    func finish(_ keys: DueIndexKeys, entries: [(userId: String, dueAt: Int64?)], leaseScore: Int64) async throws {
        guard !entries.isEmpty else { return }
        _ = try await runner.run(DueDone.self, keys: keys, arguments: .init(leaseScore: leaseScore, entries: entries))
    }
}
