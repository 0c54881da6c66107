import RedisClient

/// The heartbeats of backend-driven devices (SPEC §2): per app a sorted set of `userId\ndeviceId` scored by the last
/// heartbeat (epoch ms, ``RedisKeys/heartbeats``), and the set of apps that have such devices
/// (``RedisKeys/backendApps``), so that the housekeeping's sweep visits only those apps. A device leaves its app's set
/// when it departs; the sweep drops what a departure left behind.
struct HeartbeatStore: Sendable {
    let redis: RedisClient

    /// A device as its app's heartbeat set holds it.
    struct Entry: Sendable, Equatable {
        var userId: String
        var deviceId: String
        /// The member as stored.
        var member: String
    }

    /// A backend login: the device's first heartbeat, and its app in the set of apps with such devices (one pipeline).
    func track(appId: String, userId: String, deviceId: String, nowMs: Int64) async throws {
        _ = try await redis.pipeline([
            ["ZADD", RedisKeys(appId: appId).heartbeats, String(nowMs), Self.member(userId, deviceId)],
            ["SADD", RedisKeys.backendApps, appId],
        ])
    }

    /// A heartbeat of a device already tracked (`XX`: a device that departed meanwhile is not added back).
    func beat(appId: String, userId: String, deviceId: String, nowMs: Int64) async throws {
        _ = try await redis.send("ZADD", RedisKeys(appId: appId).heartbeats, "XX", String(nowMs), Self.member(userId, deviceId))
    }

    /// Stops tracking these devices of the user (they departed).
    func untrack(appId: String, userId: String, deviceIds: [String]) async throws {
        _ = try await redis.send(["ZREM", RedisKeys(appId: appId).heartbeats] + deviceIds.map { Self.member(userId, $0) })
    }

    /// The apps whose backend-driven devices the sweep visits. The first node to run this after an upgrade fills the
    /// set from every app's heartbeats once; afterwards it costs one read whatever the number of apps.
    func apps() async throws -> [String] {
        if try await redis.send("SET", RedisKeys.backendAppsIndexed, "1", "NX").string == "OK" {
            let all = try await redis.send("SMEMBERS", RedisKeys.apps).array?.compactMap(\.string) ?? []
            for appId in all where try await redis.send("ZCARD", RedisKeys(appId: appId).heartbeats).int ?? 0 > 0 {
                _ = try await redis.send("SADD", RedisKeys.backendApps, appId)
            }
        }
        return try await redis.send("SMEMBERS", RedisKeys.backendApps).array?.compactMap(\.string) ?? []
    }

    /// Drops a deleted app from the set once its heartbeats are gone (an appId created again re-enters on its first
    /// backend login).
    func forgetIfEmpty(appId: String) async throws {
        if try await redis.send("ZCARD", RedisKeys(appId: appId).heartbeats).int == 0 {
            _ = try await redis.send("SREM", RedisKeys.backendApps, appId)
        }
    }

    /// Up to `limit` devices of the app whose last heartbeat is older than `deadline` (epoch ms). A member that does
    /// not parse is skipped.
    func silent(appId: String, before deadline: Int64, limit: Int) async throws -> [Entry] {
        let key = RedisKeys(appId: appId).heartbeats
        let reply = try await redis.send("ZRANGEBYSCORE", key, "-inf", "(\(deadline)", "LIMIT", "0", String(limit))
        return reply.array?.compactMap(\.string).compactMap { member in
            let parts = member.split(separator: "\n", maxSplits: 1).map(String.init)
            return parts.count == 2 ? Entry(userId: parts[0], deviceId: parts[1], member: member) : nil
        } ?? []
    }

    /// Drops the entry of a device that no longer exists (its departure was filed without it).
    func dropIfGone(appId: String, _ entry: Entry) async throws {
        let keys = RedisKeys(appId: appId)
        let exists = try await redis.send("HEXISTS", keys.user(entry.userId).devices, entry.deviceId)
        if exists.int == 0 { _ = try await redis.send("ZREM", keys.heartbeats, entry.member) }
    }

    static func member(_ userId: String, _ deviceId: String) -> String {
        userId + "\n" + deviceId
    }
}
