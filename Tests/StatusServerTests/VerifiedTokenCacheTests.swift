import Foundation
import Testing

@testable import StatusServer

/// The cache of verified user tokens (``VerifiedTokenCache``) saves the decoding and the HMAC of a token a device
/// presents again, and nothing else: an expired token, a token of an app created again under the same id (another
/// secret) or of a deleted user is refused whether or not it is cached.
@Suite(.redis) struct VerifiedTokenCacheTests {
    private let entry = VerifiedTokenCache.Entry(appId: "a1", userId: "alice", generation: "g1", expiresAt: 1_000, secret: "s1")

    @Test func anEntryCountsOnlyUntilItsExpiry() {
        let cache = VerifiedTokenCache()
        #expect(cache.entry(for: "t1", now: 10) == nil)
        cache.remember("t1", entry)
        #expect(cache.entry(for: "t1", now: 999.9) == entry)
        // From the `exp` second on, as JWT verification (no leeway).
        #expect(cache.entry(for: "t1", now: 1_000) == nil)
        #expect(cache.entry(for: "t2", now: 10) == nil)
    }

    @Test func theCacheStaysWithinItsCapacity() {
        let cache = VerifiedTokenCache(capacity: 8)
        for index in 0..<100 { cache.remember("t\(index)", entry) }
        #expect(cache.count <= 8)
        #expect(cache.count > 0)
    }

    /// An upgrade with a good token and a bad platform is a 400: the token verified (and is cached now); with a token
    /// that does not verify it is a 401, since the token is checked first.
    private func upgrade(_ api: APIClient, token: String, platform: String = "toaster") async throws -> Int {
        let headers = [
            "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Authorization": "Bearer \(token)",
        ]
        return try await RawHTTP.get(port: api.client.port!, path: "/v1/connect?deviceId=d1&platform=\(platform)", headers: headers).status
    }

    @Test func aCachedTokenIsRefusedOnceItExpires() async throws {
        let clock = ManualNodeClock()
        try await withStatusd(.live, configure: clock.install) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let token = try await app.token(for: "alice", ttlSeconds: 2)
            #expect(try await upgrade(app, token: token) == 400)
            #expect(try await upgrade(app, token: token) == 400)
            clock.advance(by: .milliseconds(2100))
            #expect(try await upgrade(app, token: token) == 401)
        }
    }

    @Test func aCachedTokenOfAnAppCreatedAgainUnderItsIdIsRefused() async throws {
        try await withStatusd(.live) { api in
            let appId = "tc" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
            let first = try await api.createApp(appId: appId)
            try await first.createUsers(["alice"])
            let token = try await first.token(for: "alice")
            #expect(try await upgrade(first, token: token) == 400)

            #expect(try await api.admin(.delete, "/v1/apps/\(appId)").status == 204)
            let second = try await api.createApp(appId: appId)
            try await second.createUsers(["alice"])
            // Same app id, same user, another secret: the cached token is verified again, and fails.
            #expect(try await upgrade(second, token: token) == 401)
            #expect(try await upgrade(second, token: token, platform: "web") == 401)
            let fresh = try await second.token(for: "alice")
            #expect(try await upgrade(second, token: fresh) == 400)
        }
    }
}
