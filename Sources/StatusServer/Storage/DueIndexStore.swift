import RedisClient

/// The due-time indexes of ``DueIndexSweep`` (custom status expiries, offline graces): per app a sorted set of userIds
/// scored by when they fall due, and a set listing the apps that have one. Taking and finishing entries are scripts
/// (`due_take.lua`, `due_done.lua`); the rest are single commands.
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

    /// Leases to this node, for `leaseMs`, up to `limit` entries of `key` due at `nowMs`: (userId, due time as written).
    func take(_ key: String, nowMs: Int64, leaseMs: Int64, limit: Int) async throws -> [(userId: String, dueAt: String)] {
        try await runner.run(DueTake.self, keys: .init(index: key), arguments: .init(nowMs: nowMs, leaseMs: leaseMs, limit: limit)).entries
    }

    /// Puts entries back at later due times (epoch ms), in one pipeline, then removes the `done` ones still at the
    /// lease's score (an entry put back or written again meanwhile stays).
    func finish(_ key: String, later: [(userId: String, dueAt: Int64)], done: [String], leaseScore: Int64) async throws {
        _ = try await redis.pipeline(later.map { ["ZADD", key, String($0.dueAt), $0.userId] })
        _ = try await runner.run(DueDone.self, keys: .init(index: key), arguments: .init(leaseScore: leaseScore, userIds: done))
    }
}
