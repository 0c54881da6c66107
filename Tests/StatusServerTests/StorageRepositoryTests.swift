import Foundation
import Logging
import RedisClient
import Testing

@testable import StatusServer

/// The repositories of `Storage/` that do more than send one command, against a real Redis: what they read back and
/// which entries they leave.
@Suite(.redis) struct StorageRepositoryTests {
    private func client() throws -> RedisClient {
        var logger = Logger(label: "storage-repository-test")
        logger.logLevel = .warning
        return RedisClient(configuration: try TestRedis.configuration, logger: logger)
    }

    private func appId() -> String {
        "sr" + UUID().uuidString.prefix(8).lowercased()
    }

    /// ``DeviceRecordStore/audit(_:)``: one entry per user with devices asked for, in order, each record in the order
    /// asked (nil for a device without one), and whether the user's profile exists.
    @Test func theDeviceAuditAnswersEachUserInOrderAndSkipsUsersWithNothingAsked() async throws {
        let redis = try client()
        let appId = appId()
        let alice = RedisKeys(appId: appId).user("alice")
        let bob = RedisKeys(appId: appId).user("bob")
        let record = DeviceRecord(platform: "ios", node: "n1", connection: "c1", kind: .webSocket)
        _ = try await redis.send("HSET", alice.devices, "phone", try JSONCoding.string(record))
        _ = try await redis.send("HSET", alice.profile, "createdAt", "1")
        let store = DeviceRecordStore(redis: redis)
        let audits = try await store.audit([
            (AppUser(appId: appId, userId: "alice"), ["gone", "phone"]),
            (AppUser(appId: appId, userId: "carol"), []),
            (AppUser(appId: appId, userId: "bob"), ["tablet"]),
        ])
        #expect(audits.count == 2)
        #expect(audits.first?.records.map { $0?.connection } == [nil, "c1"])
        #expect(audits.first?.userExists == true)
        #expect(audits.last?.records.map { $0?.connection } == [nil])
        #expect(audits.last?.userExists == false)
        #expect(try await store.record(appId: appId, userId: "alice", deviceId: "phone")?.connection == "c1")
        #expect(try await store.record(appId: appId, userId: "bob", deviceId: "tablet") == nil)
        #expect(try await store.audit([]).isEmpty)
        // One user's keys per command: each user's keys are a hash slot of their own.
        _ = try await redis.send("DEL", alice.devices, alice.profile)
        _ = try await redis.send("DEL", bob.devices)
        await redis.close()
    }

    /// ``HeartbeatStore``: a heartbeat never adds back a device that stopped being tracked, the silent devices come
    /// back with their stored member, and an entry is dropped only once its device is gone.
    @Test func heartbeatsTrackBeatAndDropOnlyWhatIsGone() async throws {
        let redis = try client()
        let appId = appId()
        let keys = RedisKeys(appId: appId)
        let store = HeartbeatStore(redis: redis)
        try await store.track(appId: appId, userId: "alice", deviceId: "server-1", nowMs: 1_000)
        try await store.track(appId: appId, userId: "bob", deviceId: "server-2", nowMs: 5_000)
        #expect(try await redis.send("SISMEMBER", RedisKeys.backendApps, appId).int == 1)
        try await store.untrack(appId: appId, userId: "bob", deviceIds: ["server-2"])
        try await store.beat(appId: appId, userId: "bob", deviceId: "server-2", nowMs: 6_000)
        #expect(try await redis.send("ZSCORE", keys.heartbeats, HeartbeatStore.member("bob", "server-2")).string == nil)
        try await store.beat(appId: appId, userId: "alice", deviceId: "server-1", nowMs: 2_000)

        #expect(try await store.silent(appId: appId, before: 2_000, limit: 10).isEmpty, "the deadline is exclusive")
        let silent = try await store.silent(appId: appId, before: 2_001, limit: 10)
        #expect(silent == [HeartbeatStore.Entry(userId: "alice", deviceId: "server-1", member: "alice\nserver-1")])

        // Still a device of alice's: the entry stays.
        _ = try await redis.send("HSET", keys.user("alice").devices, "server-1", "{}")
        try await store.dropIfGone(appId: appId, silent[0])
        #expect(try await redis.send("ZCARD", keys.heartbeats).int == 1)
        try await store.forgetIfEmpty(appId: appId)
        #expect(try await redis.send("SISMEMBER", RedisKeys.backendApps, appId).int == 1)
        // Gone: the entry goes, and with no heartbeat left the app leaves the set.
        _ = try await redis.send("DEL", keys.user("alice").devices)
        try await store.dropIfGone(appId: appId, silent[0])
        #expect(try await redis.send("ZCARD", keys.heartbeats).int == 0)
        try await store.forgetIfEmpty(appId: appId)
        #expect(try await redis.send("SISMEMBER", RedisKeys.backendApps, appId).int == 0)
        await redis.close()
    }
}
