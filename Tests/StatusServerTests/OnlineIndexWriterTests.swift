import Foundation
import Logging
import RedisClient
import Testing

@testable import StatusServer

/// The online index written in batches (``OnlineIndexWriter``, `presence_index.lua`) against a real Redis: concurrent
/// updates of one app share script calls, each caller returns once its own update is in the index, and within a
/// batch, as across batches, an older version never undoes a newer one.
@Suite(.redis) struct OnlineIndexWriterTests {
    private func wiring() throws -> (RedisClient, NodeWiring) {
        var logger = Logger(label: "online-index-test")
        logger.logLevel = .warning
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: logger)
        let configuration = ServerConfiguration(redis: try TestRedis.configuration, adminKey: "unused-admin-key-0123456789")
        return (redis, try NodeWiring(configuration: configuration, redis: redis, logger: logger))
    }

    @Test func concurrentUpdatesShareScriptCallsAndAreAllWrittenWhenTheirCallersReturn() async throws {
        let (redis, wiring) = try wiring()
        let appId = "oi" + UUID().uuidString.prefix(8).lowercased()
        let keys = RedisKeys(appId: appId)
        let writer = OnlineIndexWriter(statuses: wiring.statuses)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for user in 0..<300 {
                group.addTask {
                    try await writer.apply(appId: appId, .init(userId: "u\(user)", version: 1, online: user % 3 != 0), keepMs: 60_000)
                    // Written when the call returns, whoever wrote the batch.
                    let member = try await redis.send("ZSCORE", keys.online, "u\(user)")
                    #expect((member.string != nil) == (user % 3 != 0))
                }
            }
            try await group.waitForAll()
        }
        #expect(try await redis.send("ZCARD", keys.online).int == 200)
        #expect(try await redis.send("ZCARD", keys.recentChanges).int == 300)
        #expect(writer.batchesWritten < 300, "300 concurrent updates took \(writer.batchesWritten) script calls")
        #expect(writer.batchesWritten >= 300 / OnlineIndexWriter.maxBatch)
        _ = try await redis.send("DEL", keys.online, keys.onlineVersions, keys.recentChanges)
        await redis.close()
    }

    @Test func anOlderVersionNeverUndoesANewerOneWithinABatchOrAcross() async throws {
        let (redis, wiring) = try wiring()
        let appId = "oi" + UUID().uuidString.prefix(8).lowercased()
        let keys = RedisKeys(appId: appId)
        let applied = try await wiring.statuses.index(
            appId: appId,
            updates: [
                .init(userId: "alice", version: 5, online: true), .init(userId: "alice", version: 4, online: false),
                .init(userId: "bob", version: 2, online: true), .init(userId: "bob", version: 3, online: false),
            ],
            keepMs: 60_000
        )
        #expect(applied == 3)
        #expect(try await redis.send("ZSCORE", keys.online, "alice").string != nil)
        #expect(try await redis.send("ZSCORE", keys.online, "bob").string == nil)
        // A later, older update of alice is refused too.
        #expect(try await wiring.statuses.index(appId: appId, updates: [.init(userId: "alice", version: 1, online: false)], keepMs: 60_000) == 0)
        #expect(try await redis.send("ZSCORE", keys.online, "alice").string != nil)
        #expect(try await redis.send("HGET", keys.onlineVersions, "alice").string == "5")
        _ = try await redis.send("DEL", keys.online, keys.onlineVersions, keys.recentChanges)
        await redis.close()
    }
}
