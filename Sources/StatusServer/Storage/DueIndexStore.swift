import RedisClient

/// The due-time indexes of ``DueIndexSweep`` (custom status expiries, offline graces): per app a sorted set of userIds
/// scored by when they fall due, beside it the leases of the entries being handled, and a sorted set of the apps that
/// have one, scored by their earliest entry (``RedisKeys/DueApps``). Taking and finishing entries and apps are scripts
/// (`due_take.lua`, `due_done.lua`, `due_apps_take.lua`, `due_app_settle.lua`, `due_app_mark.lua`); the rest are
/// single commands.
struct DueIndexStore: Sendable {
    let runner: ScriptRunner

    private var redis: RedisClient { runner.redis }

    /// Takes up to `limit` of the apps of `apps` whose earliest entry fell due at `nowMs` (or earlier, by Redis's clock),
    /// claiming them for `claimMs`: each appId with the generation to settle it with (``settle(_:appId:generation:next:)``).
    func dueApps(_ apps: RedisKeys.DueApps, nowMs: Int64, claimMs: Int64, limit: Int) async throws -> [(appId: String, generation: String)] {
        try await runner.run(DueAppsTake.self, keys: .init(apps), arguments: .init(nowMs: nowMs, claimMs: claimMs, limit: limit)).apps
    }

    /// Scores `appId` by `next`, its earliest remaining entry, or drops it from `apps` when nil; unless a writer marked
    /// it since it was taken with `generation`.
    func settle(_ apps: RedisKeys.DueApps, appId: String, generation: String, next: Int64?) async throws {
        _ = try await runner.run(DueAppSettle.self, keys: .init(apps), arguments: .init(appId: appId, generation: generation, next: next))
    }

    /// Adds `userId` to the index `key` of `appId` at `dueAt` unless an earlier entry is there (`ZADD LT`), then marks
    /// the app in `apps` (`due_app_mark.lua`): in that order, each acknowledged (an error reply is thrown), so that once
    /// this returns, the app is swept no later than the entry falls due, whatever a sweep did meanwhile.
    func add(_ apps: RedisKeys.DueApps, appId: String, index key: String, userId: String, dueAt: Int64) async throws {
        if case .error(let message) = try await redis.send("ZADD", key, "LT", String(dueAt), userId) {
            throw RedisClientError(kind: .server, message: message)
        }
        _ = try await runner.run(DueAppMark.self, keys: .init(apps), arguments: .init(appId: appId, dueAt: dueAt))
    }

    /// When the earliest entry of `keys` falls due, counting the leases (a lease that runs out is due again): nil when
    /// both are empty.
    func earliest(_ keys: DueIndexKeys) async throws -> Int64? {
        let replies = try await redis.pipeline([
            ["ZRANGE", keys.index, "0", "0", "WITHSCORES"], ["ZRANGE", keys.leases, "0", "0", "WITHSCORES"],
        ])
        var earliest: Int64?
        for reply in replies {
            if case .error(let message) = reply { throw RedisClientError(kind: .server, message: message) }
            guard let pair = reply.array, pair.count == 2, let text = pair[1].string, let score = Double(text) else { continue }
            let due = Int64(score.rounded(.up))
            earliest = min(earliest ?? due, due)
        }
        return earliest
    }

    /// Moves the apps of `apps.legacy` (written by earlier versions) into `apps`, due now; nothing when it is gone.
    func adoptLegacy(_ apps: RedisKeys.DueApps) async throws {
        guard try await redis.send("EXISTS", apps.legacy).int == 1 else { return }
        for appId in try await redis.send("SMEMBERS", apps.legacy).array?.compactMap(\.string) ?? [] {
            _ = try await runner.run(DueAppMark.self, keys: .init(apps), arguments: .init(appId: appId, dueAt: 0))
            _ = try await redis.send("SREM", apps.legacy, appId)
        }
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
