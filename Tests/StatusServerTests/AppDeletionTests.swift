import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7 `DELETE /v1/apps/{appId}`: all its data goes, crash-safely (a tombstone first, the keys after, finished by any
/// node), and the appId can only be created again once nothing of the old app is left.
@Suite(.redis) struct AppDeletionTests {
    private func redis() throws -> RedisClient {
        RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "app-deletion-test"))
    }

    private func wiring(_ redis: RedisClient) throws -> NodeWiring {
        var logger = Logger(label: "app-deletion-test")
        logger.logLevel = .warning
        let configuration = ServerConfiguration(redis: try TestRedis.configuration, adminKey: "unused-admin-key-0123456789")
        return try NodeWiring(configuration: configuration, redis: redis, logger: logger)
    }

    /// Every key of the app (record, tombstone, users' keys), on every master of a cluster.
    private func keys(of appId: String, _ redis: RedisClient) async throws -> [String] {
        var found: Set<String> = []
        for pattern in RedisKeys(appId: appId).allKeysPatterns {
            try await redis.scanKeys(matching: pattern) { found.formUnion($0) }
        }
        return Array(found)
    }

    /// Waits until the app's keys and its unfinished-deletion mark are gone, running `sweep` between looks, for at most
    /// a claim's lease and a minute: every node of the test process sweeps every unfinished deletion (other tests' nodes
    /// included), and one that stopped with its test while holding the claim leaves it to lapse. A run scans the whole
    /// keyspace of every master twice, and a sweep finishes the other tests' deletions too: on a busy machine, with
    /// the other suites' keys in the same Redis, that takes more than a few seconds.
    private func untilDeleted(_ appId: String, _ redis: RedisClient, sweep: () async throws -> Void) async throws {
        let deadline = ContinuousClock.now + AppDeletion.claimLease + .seconds(60)
        repeat {
            try await sweep()
            let marked = try await redis.send("SISMEMBER", RedisKeys.deletingApps, appId).int == 1
            if !marked, try await keys(of: appId, redis).isEmpty { return }
            try await Task.sleep(for: .milliseconds(100))
        } while ContinuousClock.now < deadline
        // Says what was left, so that a failure names the writer or the claim that held it.
        let marked = try await redis.send("SISMEMBER", RedisKeys.deletingApps, appId).int == 1
        let tombstone = try await redis.send("HGETALL", RedisKeys(appId: appId).deletionTombstone)
        let left = try await keys(of: appId, redis).sorted()
        let now = try await redis.send("TIME").array?.first?.string ?? "?"
        Issue.record("not deleted: marked \(marked), tombstone \(tombstone), keys left \(left), redis time \(now) s")
    }

    /// Leaves the app as a node that died right after marking it deleted would: record gone, tombstone with a lapsed claim.
    private func crashMidDeletion(_ appId: String, _ redis: RedisClient, claimedUntil: String = "0") async throws {
        let keys = RedisKeys(appId: appId)
        let digest = try #require(try await redis.send("HGET", keys.app, "key").string)
        _ = try await redis.send("SADD", RedisKeys.deletingApps, appId)
        _ = try await redis.send("HSET", keys.deletionTombstone, "key", digest, "since", "0", "owner", "dead-node", "until", claimedUntil)
        _ = try await redis.send("DEL", keys.app)
    }

    private func populate(_ app: APIClient) async throws {
        try await app.createUsers(["alice", "bob"])
        expectOK(try await app.subscribe("alice", ["bob"]))
        expectOK(try await app.call(.put, "/users/alice/friends", ["userIds": ["bob"]]))
        expectOK(try await app.login("bob", "d1"))
    }

    @Test func deleteRemovesEveryKeyAndTheAppIdStartsAfresh() async throws {
        let redis = try redis()
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await populate(app)
            #expect(try await keys(of: app.appId, redis).count > 3)
            #expect(try await api.admin(.delete, "/v1/apps/\(app.appId)").status == 204)
            #expect(try await keys(of: app.appId, redis).isEmpty)
            expectError(try await api.admin(.get, "/v1/apps/\(app.appId)"), 404, "APP_NOT_FOUND")
            expectError(try await api.admin(.delete, "/v1/apps/\(app.appId)"), 404, "APP_NOT_FOUND")
            expectError(try await app.call(.get, "/users/alice"), 401, "UNAUTHORIZED")
            #expect(try await redis.send("SISMEMBER", RedisKeys.deletingApps, app.appId).int == 0)
        }
        await redis.close()
    }

    @Test func aDeletionInterruptedByACrashBlocksRecreationAndIsFinishedByAnyNode() async throws {
        let redis = try redis()
        let wiring = try wiring(redis)
        let clock = ManualNodeClock()
        try await withStatusd(configure: clock.install) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await populate(app)
            try await crashMidDeletion(app.appId, redis)
            // Invisible once no node trusts its cached copy (a real deletion also tells every node on the bus), and not
            // creatable while the deletion is unfinished.
            clock.advance(by: AppRegistry.cacheTTL + .milliseconds(100))
            expectError(try await api.admin(.get, "/v1/apps/\(app.appId)"), 404, "APP_NOT_FOUND")
            expectError(try await app.call(.get, "/users/alice"), 401, "UNAUTHORIZED")
            let recreated = try await api.admin(.post, "/v1/apps", ["appId": .string(app.appId)])
            expectError(recreated, 409, "APP_EXISTS")
            #expect(recreated.body["error"]["message"].string?.contains("being deleted") == true)
            // The periodic sweep (housekeeping) finishes it: this call, or the node whose sweep holds the claim now (every
            // node's housekeeping sweeps every unfinished deletion, other tests' nodes included). A node that stopped
            // with its test while holding the claim leaves it to lapse (``AppDeletion/claimLease``): the sweep is
            // repeated until then, as every node's housekeeping would.
            try await untilDeleted(app.appId, redis) { try await wiring.apps.finishUnfinishedDeletions() }
            #expect(try await keys(of: app.appId, redis).isEmpty)
            #expect(try await redis.send("SISMEMBER", RedisKeys.deletingApps, app.appId).int == 0)
            // Created again: nothing inherited.
            let fresh = try await api.admin(.post, "/v1/apps", ["appId": .string(app.appId), "config": premiumConfig])
            #expect(fresh.status == 201)
            var again = app
            again.apiKey = try #require(fresh.body["apiKey"].string)
            expectError(try await again.call(.get, "/users/alice"), 404, "USER_NOT_FOUND")
            try await again.createUsers(["alice"])
            #expect(try await again.subscriptions("alice").isEmpty)
            #expect(expectOK(try await again.call(.get, "/users/alice/friends"))["userIds"].strings.isEmpty)
        }
        await redis.close()
    }

    /// The devices connected when their app is deleted are closed (the deletion removed them: their sessions file no
    /// departure). Nothing their sessions write to the app's own keys (the online index with its applied versions, the
    /// recent changes) may outlive the deletion, or the appId created again would inherit it: an old applied version
    /// would keep a new user out of the online listing.
    @Test func devicesConnectedAtTheDeletionLeaveNothingBehind() async throws {
        let redis = try redis()
        try await withStatusd(.live) { api in
            let port = try #require(api.client.port)
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            try await withThrowingTaskGroup(of: Void.self) { group in
                let (alice, _) = try await app.openDevice(port: port, userId: "alice", DeviceOptions(deviceId: "a1")) {
                    group.addTask(operation: $0)
                }
                let (bob, _) = try await app.openDevice(port: port, userId: "bob", DeviceOptions(deviceId: "b1", presence: "all")) {
                    group.addTask(operation: $0)
                }
                for value in ["one", "two", "three"] { expectOK(try await app.setStatus("alice", value)) }
                #expect(try await api.admin(.delete, "/v1/apps/\(app.appId)").status == 204)
                let deadline = ContinuousClock.now + .seconds(5)
                while !(alice.isClosed && bob.isClosed), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(alice.isClosed && bob.isClosed, "the deleted app's devices are closed")
                group.cancelAll()
            }
            // Whatever the departures wrote, the deletion has removed or refused: nothing is left, now or a moment later.
            try await untilDeleted(app.appId, redis) {}
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await keys(of: app.appId, redis).isEmpty)
            // Created again: alice is a new user with a new history, listed online when she connects.
            let fresh = try await api.admin(.post, "/v1/apps", ["appId": .string(app.appId), "config": premiumConfig])
            #expect(fresh.status == 201)
            var again = app
            again.apiKey = try #require(fresh.body["apiKey"].string)
            try await again.createUsers(["alice"])
            let recreated = again
            try await recreated.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "a1")) { _, welcome in
                #expect(welcome["status"]["version"].int == 1)
                let listed = expectOK(try await recreated.call(.get, "/users?status=online&limit=10"))
                #expect(listed["users"].array.compactMap { $0["userId"].string } == ["alice"])
            }
        }
        await redis.close()
    }

    @Test func aSecondDeleteFinishesAnAbandonedDeletionWith204() async throws {
        let redis = try redis()
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await populate(app)
            try await crashMidDeletion(app.appId, redis)
            #expect(try await api.admin(.delete, "/v1/apps/\(app.appId)").status == 204)
            // Finished by this request, or, when another node's housekeeping had claimed it first (the answer is
            // success either way), by that node.
            try await untilDeleted(app.appId, redis) {}
            #expect(try await keys(of: app.appId, redis).isEmpty)
            expectError(try await api.admin(.delete, "/v1/apps/\(app.appId)"), 404, "APP_NOT_FOUND")
            #expect(try await api.admin(.post, "/v1/apps", ["appId": .string(app.appId)]).status == 201)
        }
        await redis.close()
    }

    @Test func creationWhileAnotherNodeIsDeletingIsRefusedAndNothingVanishes() async throws {
        let redis = try redis()
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await populate(app)
            // Another (live) node holds the claim on the deletion.
            try await crashMidDeletion(app.appId, redis, claimedUntil: "99999999999999")
            expectError(try await api.admin(.post, "/v1/apps", ["appId": .string(app.appId)]), 409, "APP_EXISTS")
            #expect(try await api.admin(.delete, "/v1/apps/\(app.appId)").status == 204)
            expectError(try await api.admin(.post, "/v1/apps", ["appId": .string(app.appId)]), 409, "APP_EXISTS")
            // The owner's claim lapses (it died): the next DELETE or sweep finishes, and only then may it be created.
            _ = try await redis.send("HSET", RedisKeys(appId: app.appId).deletionTombstone, "until", "0")
            #expect(try await api.admin(.delete, "/v1/apps/\(app.appId)").status == 204)
            // Finished by this request, or by the node whose housekeeping claimed it first (other tests' nodes share
            // this Redis): 204 either way, and the appId is free once it is done.
            try await untilDeleted(app.appId, redis) {}
            let created = try await api.admin(.post, "/v1/apps", ["appId": .string(app.appId), "config": premiumConfig])
            #expect(created.status == 201)
            var again = app
            again.apiKey = try #require(created.body["apiKey"].string)
            try await again.createUsers(["carol"])
            try await Task.sleep(for: .milliseconds(200))
            expectOK(try await again.call(.get, "/users/carol"))
        }
        await redis.close()
    }
}

/// Unauthenticated requests allocate nothing per appId: the app cache keeps existing apps only.
@Suite(.redis) struct AppCacheBoundTests {
    @Test func unknownAppIdsLeaveTheCacheEmpty() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "app-cache-test"))
        let registry = AppRegistry(redis: redis, scripts: try ScriptLibrary.load(), clock: SystemNodeClock())
        let prefix = "ghost" + UUID().uuidString.prefix(8)
        for index in 0..<5_000 {
            #expect(try await registry.find("\(prefix)-\(index)") == nil)
        }
        #expect(registry.cachedCount == 0)
        let created = try await registry.create(appId: "cache" + UUID().uuidString.prefix(8), config: AppConfig())
        #expect(try await registry.find(created.record.appId) != nil)
        #expect(registry.cachedCount == 1)
        try await registry.delete(created.record.appId)
        #expect(registry.cachedCount == 0)
        await redis.close()
    }

    @Test func wrongKeysForUnknownAppsThroughHTTPAreRefused() async throws {
        try await withStatusd { api in
            for index in 0..<500 {
                expectError(try await api.raw(.get, "/v1/apps/nope\(index)/users/alice", key: "sk_wrong"), 401, "UNAUTHORIZED")
            }
        }
    }
}
