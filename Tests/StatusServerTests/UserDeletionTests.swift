import Foundation
import Logging
import RedisClient
import StatusCore
import Synchronization
import Testing

@testable import StatusServer

/// SPEC §7: deleting a user removes every other user's subscription to them and invalidates their tokens; a user
/// created again under the same id starts with no subscribers and needs new tokens.
@Suite(.redis) struct UserDeletionTests {
    @Test func deletionRemovesEveryInboundSubscription() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob", "carol", "dave"])
            expectOK(try await app.subscribe("bob", ["alice", "dave"]))
            expectOK(try await app.subscribe("carol", ["alice"]))
            expectOK(try await app.subscribe("alice", ["dave"]))
            // An unsubscribe and a re-subscribe leave the reverse index correct.
            expectOK(try await app.unsubscribe("carol", ["alice"]))
            expectOK(try await app.subscribe("carol", ["alice"]))
            #expect(try await app.call(.delete, "/users/alice").status == 204)
            #expect(try await app.subscriptions("bob") == ["dave"])
            #expect(try await app.subscriptions("carol").isEmpty)
            try await app.createUsers(["alice"])
            #expect(try await app.subscriptions("bob") == ["dave"])
            #expect(try await app.subscriptions("carol").isEmpty)
            #expect(try await app.subscriptions("alice").isEmpty)
        }
    }

    @Test func aDeletedSubscriberLeavesNoReverseEntries() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "user-deletion-test"))
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("bob", ["alice"]))
            let reverse = RedisKeys(appId: app.appId).user("alice").subscribers
            #expect(try await redis.send("ZRANGE", reverse, "0", "-1").array?.compactMap(\.string) == ["bob"])
            #expect(try await app.call(.delete, "/users/bob").status == 204)
            #expect(try await redis.send("EXISTS", reverse).int == 0)
        }
        await redis.close()
    }

    @Test func aReverseIndexWrittenAsASetByEarlierVersionsIsStillHonoured() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "user-deletion-test"))
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            // bob's subscription to alice as an earlier version stored it: the reverse entry in a plain set.
            let keys = RedisKeys(appId: app.appId)
            _ = try await redis.send("ZADD", keys.user("bob").subscriptions, "1", "alice")
            _ = try await redis.send("SADD", keys.user("alice").legacySubscribers, "bob")
            #expect(try await app.subscriptions("bob") == ["alice"])
            #expect(try await app.call(.delete, "/users/alice").status == 204)
            #expect(try await app.subscriptions("bob").isEmpty)
            #expect(try await redis.send("EXISTS", keys.user("alice").legacySubscribers).int == 0)
        }
        await redis.close()
    }

    /// docs/scaling.md's memory budget: with `zset-max-listpack-entries 256` (deploy/redis.conf, the private
    /// redis-server, the test servers) a user's 200 subscriptions and 200 subscribers stay in the compact encoding.
    @Test func twoHundredSubscriptionsAndSubscribersStayListpacks() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "user-deletion-test"))
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            let others = (0..<200).map { "u\($0)" }
            try await app.createUsers(["alice"] + others)
            for batch in stride(from: 0, to: 200, by: 100) {
                expectOK(try await app.subscribe("alice", Array(others[batch..<batch + 100])))
            }
            for other in others { expectOK(try await app.subscribe(other, ["alice"])) }
            let keys = RedisKeys(appId: app.appId).user("alice")
            #expect(try await redis.send("ZCARD", keys.subscriptions).int == 200)
            #expect(try await redis.send("ZCARD", keys.subscribers).int == 200)
            #expect(try await redis.send("OBJECT", "ENCODING", keys.subscriptions).string == "listpack")
            #expect(try await redis.send("OBJECT", "ENCODING", keys.subscribers).string == "listpack")
        }
        await redis.close()
    }

    @Test func tokensOfADeletedUserDoNotWorkForTheUserCreatedAgain() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "user-deletion-test"))
        var logger = Logger(label: "user-deletion-test")
        logger.logLevel = .warning
        let configuration = ServerConfiguration(redis: try TestRedis.configuration, adminKey: "unused-admin-key-0123456789")
        let wiring = try NodeWiring(configuration: configuration, redis: redis, logger: logger)
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            let old = try #require(expectOK(try await app.call(.post, "/users/alice/tokens", [:]))["token"].string)
            let generation = try #require(try await wiring.users.tokenGeneration(appId: app.appId, userId: "alice"))
            #expect(try await wiring.tokens.verify(old).generation == generation)
            // Updating the profile keeps the tokens valid.
            expectOK(try await app.call(.put, "/users/alice", ["name": "Alice"]))
            #expect(try await wiring.users.tokenGeneration(appId: app.appId, userId: "alice") == generation)
            let headers = [
                "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                "Authorization": "Bearer \(old)",
            ]
            // The node verifies the token (and caches it): a bad platform is then the only fault.
            let verified = try await RawHTTP.get(port: api.client.port!, path: "/v1/connect?deviceId=d1&platform=toaster", headers: headers)
            #expect(verified.status == 400)

            #expect(try await app.call(.delete, "/users/alice").status == 204)
            try await app.createUsers(["alice"])
            // The signature still checks out; the generation is the user's no more, and the connect refuses it.
            #expect(try await wiring.tokens.verify(old).generation == generation)
            #expect(try await wiring.users.tokenGeneration(appId: app.appId, userId: "alice") != generation)
            let refused = try await RawHTTP.get(port: api.client.port!, path: "/v1/connect?deviceId=d1&platform=web", headers: headers)
            #expect(refused.status == 401)
            #expect(refused.body["error"]["code"].string == "UNAUTHORIZED")
            // Refused in the connect's own step: nothing was written.
            #expect(try await redis.send("HLEN", RedisKeys(appId: app.appId).user("alice").devices).int == 0)
            #expect(try await redis.send("HGET", RedisKeys(appId: app.appId).user("alice").status, "t").string == nil)

            let fresh = try #require(expectOK(try await app.call(.post, "/users/alice/tokens", [:]))["token"].string)
            #expect(try await wiring.tokens.verify(fresh).userId == "alice")
        }
        await redis.close()
    }
}

extension UserDeletionTests {
    /// A deleted user's sockets hear why they close: `{"event": "kicked", "reason": "deleted"}`, the same reason a node
    /// that missed the deletion during a bus gap gives them (GapRepairTests); the webhook hears a kick (SPEC §8).
    @Test func aDeletedUsersDevicesAreToldTheyWereDeleted() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "a1")) { device, _ in
                _ = expectOK(try await app.call(.delete, "/users/alice"), 204)
                let kicked = try await device.next(timeout: .seconds(3)) { $0["event"].string == "kicked" }
                #expect(kicked["reason"].string == "deleted")
                try await device.waitClosed(timeout: .seconds(2))
            }
            expectError(try await app.call(.get, "/users/alice"), 404, "USER_NOT_FOUND")
        }
    }

    /// SPEC §6 and §10.3: a deletion is a change like any other, published on the user's channel in the step that keeps
    /// the versions, after the kick's departure and before any subscription or friendship to the user goes: a node
    /// whose bus feed was down when the departure went out hears this instead once it is back, while its sessions
    /// still relate to the user (docs/delivery.md). Its status is the new user's start: `unlogined`, at the kept
    /// versions (moved past the departure, which kept the custom status in the own view), with the role.
    @Test func theDeletionIsPublishedAsTheChangeItIs() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            expectOK(try await app.call(.put, "/users/alice", ["role": "member"]))
            expectOK(try await app.login("alice", "a1"))
            expectOK(try await app.call(.put, "/users/alice/status", ["customStatus": "here", "availability": "busy"]))
            try await withRunningClient(try TestRedis.configuration, "deletion-published") { client in
                let received = Mutex<[String]>([])
                let subscriber = RedisShardSubscriber(client: client, logger: Logger(label: "deletion-published")) { event in
                    if case .message(_, let payload) = event { received.withLock { $0.append(String(decoding: payload, as: UTF8.self)) } }
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await subscriber.run() }
                    defer { group.cancelAll() }
                    try await subscriber.subscribe([BusChannels.user(app.appId, "alice")])
                    let before = try #require(try await app.ownStatus("alice")["version"].int)
                    #expect(try await app.call(.delete, "/users/alice").status == 204)
                    // The bus message `deleted` goes last (docs/bus.md).
                    let deadline = ContinuousClock.now + .seconds(3)
                    while !received.withLock({ $0.contains { $0.contains(#""type":"deleted""#) } }) && ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    let messages = received.withLock { $0 }.compactMap(ModelRun.decode).filter { $0["type"] == "status" }
                    #expect(messages.count == 2, "\(messages)")
                    // The kick's departure, then the deletion.
                    #expect(messages.first?["status"]["version"].int == before + 1)
                    let deletion = try #require(messages.last)
                    #expect(deletion["type"] == "status" && deletion["change"] == "status" && deletion["role"] == "member")
                    #expect(deletion["status"]["statusType"] == "unlogined" && deletion["status"]["availability"] == "available")
                    #expect(!deletion["status"].has("customStatus") && deletion["status"]["onlineDevices"] == [])
                    #expect(deletion["status"]["version"].int == before + 2 && deletion["publicChange"] == true)
                    try await app.createUsers(["alice"])
                    #expect(try await app.ownStatus("alice")["version"].int == before + 2)
                }
            }
        }
    }

    /// A user created again under a deleted one's id goes on from the deleted one's versions (SPEC §10.5: versions never
    /// go back for any viewer): the deletion is a change, and the new user's changes are newer than anything a watcher
    /// heard of the deleted one, so neither the node nor a client that drops stale events (SPEC §2) drops them.
    @Test func aUserCreatedAgainGoesOnFromTheDeletedOnesVersions() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "b1", presence: "all")) { watcher, _ in
                for text in ["one", "two", "three", "four"] { expectOK(try await app.setStatus("alice", text)) }
                _ = try await watcher.next { $0["statuses"][0]["customStatus"] == "four" }
                #expect(try await app.call(.delete, "/users/alice").status == 204)
                try await app.createUsers(["alice"])
                // The new alice: nothing of the deleted one but the versions, moved by the deletion.
                let fresh = try await app.ownStatus("alice")
                #expect(fresh["statusType"] == "unlogined" && !fresh.has("customStatus") && fresh["version"].int == 5)
                let seen = expectOK(try await app.query("bob", ["alice"]))
                #expect(seen["statuses"][0]["version"].int == 5 && !seen["statuses"][0].has("customStatus"))
                let status = expectOK(try await app.setStatus("alice", "anew"))
                #expect(status["version"].int == 6)
                let heard = try await watcher.next { $0["statuses"][0]["userId"] == "alice" && $0["statuses"][0]["customStatus"] == "anew" }
                #expect(heard["statuses"][0]["version"].int == 6)
            }
        }
    }

    /// A deletion moves only the versions whose view it changes: a user who never logged in nor set anything is created
    /// again at version 0; one deleted while already `unlogined` with nothing set keeps their version. What is kept
    /// expires in 30 days. A deletion run again after an interrupted one keeps what the first kept.
    @Test func aDeletionMovesTheVersionsOfTheViewsItChanges() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "user-deletion-test"))
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "carol"])
            #expect(try await app.call(.delete, "/users/carol").status == 204)
            try await app.createUsers(["carol"])
            #expect(try await app.ownStatus("carol")["version"].int == 0)

            expectOK(try await app.setStatus("alice", "here"))
            expectOK(try await app.setStatus("alice", nil))
            #expect(try await app.ownStatus("alice")["version"].int == 2)
            #expect(try await app.call(.delete, "/users/alice").status == 204)
            try await app.createUsers(["alice"])
            #expect(try await app.ownStatus("alice")["version"].int == 2)

            expectOK(try await app.setStatus("alice", "again"))
            #expect(try await app.call(.delete, "/users/alice").status == 204)
            // Kept for a bounded time (an app deleting users under ever new ids does not grow Redis for ever).
            let kept = try await redis.send("PTTL", RedisKeys(appId: app.appId).user("alice").retiredVersions).int ?? -1
            #expect(kept > StatusRetire.keepMs - 60_000 && kept <= StatusRetire.keepMs, "\(kept)")
            // As if the first deletion had stopped after the status hash: a key of the user is left, and the next
            // DELETE finishes it without a status hash to read.
            _ = try await redis.send("SADD", RedisKeys(appId: app.appId).user("alice").friends, "carol")
            #expect(try await app.call(.delete, "/users/alice").status == 204)
            try await app.createUsers(["alice"])
            #expect(try await app.ownStatus("alice")["version"].int == 4)
        }
        await redis.close()
    }

    /// A deletion that stopped after its first step (the profile gone, Redis failing the request midway) is finished
    /// by the next DELETE, 204; only then is the user not found.
    @Test func aDeletionStoppedAfterTheProfileIsFinishedByTheNextDelete() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "user-deletion-test"))
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.login("alice", "phone"))
            expectOK(try await app.subscribe("bob", ["alice"]))
            _ = try await redis.send("DEL", RedisKeys(appId: app.appId).user("alice").profile)
            #expect(try await app.call(.delete, "/users/alice").status == 204)
            let user = RedisKeys(appId: app.appId).user("alice")
            #expect(try await redis.send(["EXISTS"] + user.all).int == 0)
            #expect(try await app.subscriptions("bob").isEmpty)
            expectError(try await app.call(.delete, "/users/alice"), 404, "USER_NOT_FOUND")
            expectError(try await app.call(.delete, "/users/nobody"), 404, "USER_NOT_FOUND")
        }
        await redis.close()
    }
}
