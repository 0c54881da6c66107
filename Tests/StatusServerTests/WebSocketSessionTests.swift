import Foundation
import Hummingbird
import HummingbirdTesting
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7 device WebSocket: upgrade checks, welcome, requests and replies, shared counters.
@Suite(.redis) struct WebSocketSessionTests {
    /// Sends a raw upgrade request and returns the HTTP status and error code of a refusal.
    private func upgrade(_ api: APIClient, query: String, token: String?) async throws -> (Int, String?) {
        var headers = [
            "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        ]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        let response = try await RawHTTP.get(port: api.client.port!, path: "/v1/connect?\(query)", headers: headers)
        return (response.status, response.body["error"]["code"].string)
    }

    @Test func welcomeComesFirstWithStatusAndHeartbeatInterval() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["heartbeatTimeoutSeconds": 60])
            try await app.createUsers(["alice"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "phone-1", platform: "ios")) { _, welcome in
                #expect(welcome["userId"].string == "alice")
                #expect(welcome["deviceId"].string == "phone-1")
                let interval = try #require(welcome["heartbeatSeconds"].int)
                #expect(interval > 0 && interval < 60)
                #expect(welcome["status"]["statusType"].string == "online")
                #expect(welcome["status"]["onlineDevices"][0]["platform"].string == "ios")
            }
            // The token may also come in the query string (browsers).
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "web-1", tokenInQuery: true)) { _, welcome in
                #expect(welcome["status"]["statusType"].string == "online")
            }
        }
    }

    @Test func upgradeIsRefusedWith401ForBadTokensAnd400ForBadParameters() async throws {
        let clock = ManualNodeClock()
        try await withStatusd(.live, configure: clock.install) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "gone"])
            let token = try await app.token(for: "alice")
            let ok = "deviceId=d1&platform=web"
            #expect(try await upgrade(api, query: ok, token: nil) == (401, "UNAUTHORIZED"))
            #expect(try await upgrade(api, query: ok, token: "not.a.token") == (401, "UNAUTHORIZED"))
            #expect(try await upgrade(api, query: ok, token: token + "x") == (401, "UNAUTHORIZED"))
            #expect(try await upgrade(api, query: "deviceId=bad%20id&platform=web", token: token) == (400, "INVALID_USER_ID"))
            #expect(try await upgrade(api, query: "deviceId=d1&platform=toaster", token: token) == (400, "INVALID_REQUEST"))
            #expect(try await upgrade(api, query: "deviceId=d1&platform=web&presence=everyone", token: token) == (400, "INVALID_REQUEST"))
            #expect(try await upgrade(api, query: "platform=web", token: token) == (400, "INVALID_REQUEST"))
            // A token of a deleted user.
            let goneToken = try await app.token(for: "gone")
            #expect(try await app.call(.delete, "/users/gone").status == 204)
            #expect(try await upgrade(api, query: ok, token: goneToken) == (401, "UNAUTHORIZED"))
            // An expired token (no leeway).
            let response = try await app.call(.post, "/users/alice/tokens", ["ttlSeconds": 1])
            let shortLived = try #require(response.body["token"].string)
            clock.advance(by: .milliseconds(2100))
            #expect(try await upgrade(api, query: ok, token: shortLived) == (401, "UNAUTHORIZED"))
            // A token of a deleted app.
            #expect(try await api.admin(.delete, "/v1/apps/\(app.appId)").status == 204)
            #expect(try await upgrade(api, query: ok, token: token) == (401, "UNAUTHORIZED"))
        }
    }

    @Test func malformedAndUnknownFramesGetErrorRepliesAndTheConnectionStays() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "d1")) { device, _ in
                try await device.sendRaw("{not json")
                let bad = try await device.next { $0.has("error") && $0["id"].isNull }
                #expect(bad["error"]["code"].string == "INVALID_REQUEST")
                let unknown = try await device.request("fly")
                #expect(unknown["ok"].bool == false)
                #expect(unknown["error"]["code"].string == "INVALID_REQUEST")
                let wrongType = try await device.request("setSelfStatus", ["customStatus": 5])
                #expect(wrongType["error"]["code"].string == "INVALID_REQUEST")
                let fine = try await device.request("setSelfStatus", ["customStatus": "still here"])
                #expect(fine["ok"].bool == true)
                #expect(fine["result"]["customStatus"].string == "still here")
                #expect(!device.isClosed)
            }
        }
    }

    @Test func operationsOverTheSocketFollowTheSameRules() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "d1")) { device, _ in
                let tooLong = try await device.request("setSelfStatus", ["customStatus": .string(String(repeating: "é", count: 51))])
                #expect(tooLong["error"]["code"].string == "CUSTOM_STATUS_TOO_LONG")
                let subscribed = try await device.request("subscribeUserStatus", ["userIds": ["bob", "alice", "nobody"]])
                #expect(subscribed["result"]["subscribed"].strings == ["bob"])
                #expect(subscribed["result"]["failures"].array.count == 2)
                let query = try await device.request("getUserStatus", ["userIds": ["bob"]])
                #expect(query["result"]["statuses"][0]["statusType"].string == "unlogined")
                let unsubscribed = try await device.request("unsubscribeUserStatus")
                #expect(unsubscribed["result"]["unsubscribed"].strings == ["bob"])
                let heartbeat = try await device.request("heartbeat")
                #expect(heartbeat["ok"].bool == true)
            }
        }
    }

    @Test func theRateLimitCounterIsSharedWithTheHTTPAPI() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            for _ in 0..<20 {
                #expect(try await app.call(.post, "/users/alice/status/query", ["userIds": ["bob"]]).status == 200)
            }
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "d1")) { device, _ in
                let limited = try await device.request("getUserStatus", ["userIds": ["bob"]])
                #expect(limited["ok"].bool == false)
                #expect(limited["error"]["code"].string == "RATE_LIMITED")
                let retry = try #require(limited["error"]["retryAfterMs"].int)
                #expect(retry > 0 && retry <= 5000)
                // Self queries are never limited.
                let own = try await device.request("getUserStatus", ["userIds": ["alice"]])
                #expect(own["ok"].bool == true)
            }
        }
    }
}
