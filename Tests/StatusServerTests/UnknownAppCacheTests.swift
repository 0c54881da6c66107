import Foundation
import JWTKit
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// Requests naming made-up apps: the node remembers the appId as missing for a moment, so a flood of them costs Redis
/// one lookup, not one per request; an app created meanwhile is found at once.
@Suite(.redis, .serialized) struct UnknownAppCacheTests {
    @Test func repeatedRequestsForAMadeUpAppCostNoRedisCommands() async throws {
        // Commands are counted on a server of this test's own: the shared one counts every test running meanwhile.
        try await withPrivateRedis { server in
            let redis = RedisClient(configuration: server.configuration, logger: Logger(label: "unknown-app"))
            try await withStatusd(configure: { $0.redis = server.configuration }) { api in
                let path = "/v1/apps/made-up-\(UUID().uuidString.prefix(8).lowercased())/users/alice"
                #expect(try await api.raw(.get, path, key: "sk_not_a_key").status == 401)
                let before = try await Self.lookups(redis)
                for _ in 0..<100 {
                    #expect(try await api.raw(.get, path, key: "sk_not_a_key").status == 401)
                }
                let after = try await Self.lookups(redis)
                print("app and API key lookups for 100 requests naming a made-up app: \(after - before)")
                // Uncached, each request costs two (the app, then the key's owner): 200. One more lookup of each is
                // allowed when the loop crosses the 500 ms lifetime, and some for the node's own housekeeping.
                #expect(after - before < 50)
            }
            await redis.close()
        }
    }

    @Test func repeatedTokensNamingAMadeUpAppCostNoRedisCommands() async throws {
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        let redis = RedisClient(configuration: server.configuration, logger: Logger(label: "unknown-app"))
        let wiring = try NodeWiring(
            configuration: ServerConfiguration(redis: server.configuration, adminKey: "unused"),
            redis: redis,
            logger: Logger(label: "unknown-app")
        )
        let claims = UserTokenClaims(
            sub: .init(value: "alice"),
            app: "made-up-" + UUID().uuidString.prefix(8).lowercased(),
            exp: .init(value: Date().addingTimeInterval(3600)),
            gen: "g"
        )
        let token = try await JWTKeyCollection().add(hmac: HMACKey(from: String(repeating: "s", count: 64)), digestAlgorithm: .sha256).sign(claims)
        await #expect(throws: StatusError.self) { try await wiring.tokens.verify(token) }
        let before = try await Self.lookups(redis)
        for _ in 0..<100 {
            await #expect(throws: StatusError.self) { try await wiring.tokens.verify(token) }
        }
        #expect(try await Self.lookups(redis) - before < 10, "uncached: 100")
        await redis.close()
    }

    @Test func appCreatedOnThisNodeIsFoundAtOnce() async throws {
        try await withStatusd { api in
            let appId = "late-" + UUID().uuidString.prefix(8).lowercased()
            #expect(try await api.raw(.get, "/v1/apps/\(appId)/users/alice", key: "sk_not_a_key").status == 401)
            let app = try await api.createApp(appId: appId)
            try await app.createUsers(["alice"])
            #expect(try await app.call(.get, "/users/alice").status == 200)
        }
    }

    @Test func entriesExpireAndTheCacheStaysBounded() {
        let now = ContinuousClock.now
        var cache = ShortLivedCache<Bool>(ttl: .milliseconds(500), capacity: 4)
        cache.store(true, for: "a", now: now)
        #expect(cache.value(for: "a", now: now + .milliseconds(499)) == true)
        #expect(cache.value(for: "a", now: now + .milliseconds(500)) == nil)
        for (offset, key) in ["b", "c", "d"].enumerated() { cache.store(true, for: key, now: now + .milliseconds(offset + 1)) }
        #expect(cache.count == 4)
        cache.store(true, for: "e", now: now + .milliseconds(10))
        #expect(cache.count <= 4)
        #expect(cache.value(for: "e", now: now + .milliseconds(10)) == true, "the newest entry stays")
        #expect(cache.value(for: "a", now: now + .milliseconds(10)) == nil, "the oldest went first")
        cache.store(true, for: "g", now: now + .milliseconds(20))
        cache.store(true, for: "h", now: now + .milliseconds(21))
        #expect(cache.count == 4)
        cache.store(true, for: "f", now: now + .seconds(1))
        #expect(cache.count == 1, "at the bound, expired entries go first")
        cache.remove("f")
        #expect(cache.value(for: "f", now: now + .seconds(1)) == nil)
    }

    /// Calls of the commands an app lookup (`HMGET`, with `EXISTS`) and an API key lookup (`GET`) send, from
    /// `INFO commandstats`.
    static func lookups(_ redis: RedisClient) async throws -> Int {
        let info = try await redis.send("INFO", "commandstats").string ?? ""
        var total = 0
        for line in info.split(whereSeparator: \.isNewline) {
            for command in ["cmdstat_hmget:", "cmdstat_get:"] where line.hasPrefix(command) {
                let calls = line.dropFirst(command.count).split(separator: ",").first { $0.hasPrefix("calls=") }
                total += calls.flatMap { Int($0.dropFirst("calls=".count)) } ?? 0
            }
        }
        return total
    }
}
