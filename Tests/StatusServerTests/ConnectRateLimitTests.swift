import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.6 `connectRateLimit`: at most `calls` device connects per user in any `windowSeconds` (sliding window, the
/// accepted ones counted, WebSocket upgrades and backend logins together); past it the upgrade or login is refused
/// with 429 `RATE_LIMITED`, `retryAfterMs` and `Retry-After`, and nothing is stored.
@Suite(.redis) struct ConnectRateLimitTests {
    @Test func theDefaultIs30ConnectsPer60Seconds() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let config = try await api.admin(.get, "/v1/apps/\(app.appId)")
            #expect(config.body["config"]["connectRateLimit"] == ["calls": 30, "windowSeconds": 60])
            expectError(try await app.admin(.patch, "/v1/apps/\(app.appId)/config", ["connectRateLimit": ["calls": 0]]), 400, "INVALID_REQUEST")
            expectError(
                try await app.admin(.patch, "/v1/apps/\(app.appId)/config", ["connectRateLimit": ["calls": 3, "window": 5]]),
                400,
                "INVALID_REQUEST"
            )
        }
    }

    @Test func connectsPastTheLimitAreRefusedAndStoreNothing() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["connectRateLimit": ["calls": 2, "windowSeconds": 60]])
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.login("alice", "d1"))
            // A WebSocket upgrade counts too.
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "d2")) { _, _ in }
            let before = try await app.backendStatus("alice")
            let refused = try await app.login("alice", "d3")
            expectError(refused, 429, "RATE_LIMITED")
            let retry = try #require(refused.body["error"]["retryAfterMs"].int)
            #expect(retry > 0 && retry <= 60_000)
            #expect(Int64(refused.headers[.retryAfter] ?? "") == (retry + 999) / 1000)
            let token = try await app.token(for: "alice")
            let upgrade = try await RawHTTP.get(
                port: api.client.port!,
                path: "/v1/connect?deviceId=d4&platform=web",
                headers: [
                    "Authorization": "Bearer \(token)", "Upgrade": "websocket", "Connection": "Upgrade",
                    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
                ]
            )
            #expect(upgrade.status == 429)
            #expect(upgrade.body["error"]["code"] == "RATE_LIMITED")
            // Nothing stored: the same status, no new device; another user is not limited.
            let after = try await app.backendStatus("alice")
            #expect(after["version"] == before["version"])
            #expect(after["onlineDevices"].array.compactMap { $0["deviceId"].string } == ["d1"])
            expectOK(try await app.login("bob", "d1"))
        }
    }
}
