import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7: deleting a user removes every other user's subscription to them and invalidates their tokens; a user
/// created again under the same id starts with no subscribers and needs new tokens.
@Suite struct UserDeletionTests {
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
            #expect(try await redis.send("SMEMBERS", reverse).array?.compactMap(\.string) == ["bob"])
            #expect(try await app.call(.delete, "/users/bob").status == 204)
            #expect(try await redis.send("EXISTS", reverse).int == 0)
        }
        await redis.close()
    }

    @Test func tokensOfADeletedUserDoNotWorkForTheUserCreatedAgain() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "user-deletion-test"))
        var logger = Logger(label: "user-deletion-test")
        logger.logLevel = .warning
        let configuration = ServerConfiguration(redis: try TestRedis.configuration, adminKey: "unused-admin-key-0123456789")
        let services = try ServerServices(configuration: configuration, redis: redis, logger: logger)
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            let old = try #require(expectOK(try await app.call(.post, "/users/alice/tokens", [:]))["token"].string)
            #expect(try await services.tokens.verify(old).1 == "alice")
            // Updating the profile keeps the tokens valid.
            expectOK(try await app.call(.put, "/users/alice", ["name": "Alice"]))
            #expect(try await services.tokens.verify(old).1 == "alice")

            #expect(try await app.call(.delete, "/users/alice").status == 204)
            try await app.createUsers(["alice"])
            await #expect(throws: StatusError.self) { try await services.tokens.verify(old) }
            let headers = [
                "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                "Authorization": "Bearer \(old)",
            ]
            let refused = try RawHTTP.get(port: api.client.port!, path: "/v1/connect?deviceId=d1&platform=web", headers: headers)
            #expect(refused.status == 401)
            #expect(refused.body["error"]["code"].string == "UNAUTHORIZED")

            let fresh = try #require(expectOK(try await app.call(.post, "/users/alice/tokens", [:]))["token"].string)
            #expect(try await services.tokens.verify(fresh).1 == "alice")
        }
        await redis.close()
    }
}
