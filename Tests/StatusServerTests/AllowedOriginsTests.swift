import Foundation
import Hummingbird
import HummingbirdTesting
import StatusCore
import Testing

@testable import StatusServer

/// The `allowedOrigins` config flag: browsers of a listed origin connect, others get 403 `FORBIDDEN` on the upgrade,
/// and an app without the list accepts any origin.
@Suite(.redis) struct AllowedOriginsTests {
    /// Sends a raw upgrade request with an `Origin` header and returns the HTTP status and error code of a refusal.
    private func upgrade(_ api: APIClient, token: String, origin: String?) async throws -> (Int, String?) {
        var headers = [
            "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Authorization": "Bearer \(token)",
        ]
        if let origin { headers["Origin"] = origin }
        let response = try await RawHTTP.get(port: api.client.port!, path: "/v1/connect?deviceId=d1&platform=web", headers: headers)
        return (response.status, response.body["error"]["code"].string)
    }

    @Test func aListedOriginConnectsAndAnyOtherIsRefusedWith403() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["allowedOrigins": ["https://chat.example.com", "http://localhost:3000"]])
            try await app.createUsers(["alice"])
            let token = try await app.token(for: "alice")
            #expect(try await upgrade(api, token: token, origin: "https://evil.example.net") == (403, "FORBIDDEN"))
            #expect(try await upgrade(api, token: token, origin: "http://chat.example.com") == (403, "FORBIDDEN"))
            #expect(try await upgrade(api, token: token, origin: "https://chat.example.com:8443") == (403, "FORBIDDEN"))
            #expect(try await upgrade(api, token: token, origin: "null") == (403, "FORBIDDEN"))
            #expect(try await upgrade(api, token: token, origin: "chrome-extension://abcdef") == (403, "FORBIDDEN"))
            // The token is still checked first: a bad one is 401 whatever the origin.
            #expect(try await upgrade(api, token: token + "x", origin: "https://evil.example.net") == (401, "UNAUTHORIZED"))
            // A refused upgrade leaves the user as it was.
            let status = try await app.call(.post, "/status/query", ["userIds": ["alice"]])
            #expect(status.body["statuses"][0]["statusType"].string == "unlogined")
            // Listed origins connect, compared as browsers send them (case of scheme and host does not matter).
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "web-1", origin: "https://Chat.Example.com")) {
                _,
                welcome in
                #expect(welcome["status"]["statusType"].string == "online")
            }
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "web-2", origin: "http://localhost:3000")) { _, welcome in
                #expect(welcome["deviceId"].string == "web-2")
            }
            // A client that is not a browser sends no Origin, or (like this test's WebSocket client) its own ws:// address,
            // and is not held to the list.
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone-1", platform: "ios")) { _, welcome in
                #expect(welcome["deviceId"].string == "phone-1")
            }
        }
    }

    @Test func withoutAListEveryOriginConnectsAndAChangeTakesEffectOnTheNextUpgrade() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            #expect(try await api.admin(.get, "/v1/apps/\(app.appId)").body["config"]["allowedOrigins"].isNull)
            try await app.createUsers(["alice"])
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "web-1", origin: "https://anything.example")) {
                _,
                welcome in
                #expect(welcome["deviceId"].string == "web-1")
            }
            let patched = try await api.admin(.patch, "/v1/apps/\(app.appId)/config", ["allowedOrigins": ["https://only.example"]])
            #expect(patched.status == 200)
            #expect(patched.body["allowedOrigins"] == ["https://only.example"])
            // The node that made the change answers from the new config at once.
            let token = try await app.token(for: "alice")
            #expect(try await upgrade(api, token: token, origin: "https://anything.example") == (403, "FORBIDDEN"))
            // An empty list admits no browser at all.
            #expect(try await api.admin(.patch, "/v1/apps/\(app.appId)/config", ["allowedOrigins": []]).status == 200)
            #expect(try await upgrade(api, token: token, origin: "https://only.example") == (403, "FORBIDDEN"))
            // null restores "any origin".
            #expect(try await api.admin(.patch, "/v1/apps/\(app.appId)/config", ["allowedOrigins": nil]).status == 200)
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "web-3", origin: "https://anything.example")) {
                _,
                welcome in
                #expect(welcome["deviceId"].string == "web-3")
            }
        }
    }

    @Test func invalidListsAreRejectedWholeAndChangeNothing() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["allowedOrigins": ["https://a.example"]])
            let path = "/v1/apps/\(app.appId)/config"
            let invalid: [JSONValue] = [
                "https://a.example", ["a.example"], ["https://a.example/path"], ["ftp://a.example"], ["https://user@a.example"],
                ["https://a.example:0"], [5], .array(Array(repeating: "https://a.example", count: 101)),
            ]
            for value in invalid {
                let response = try await api.admin(.patch, path, ["allowedOrigins": value, "statusQuery": true])
                expectError(response, 400, "INVALID_REQUEST")
            }
            let config = try await api.admin(.get, "/v1/apps/\(app.appId)").body["config"]
            #expect(config["allowedOrigins"] == ["https://a.example"])
            #expect(config["statusQuery"].bool == false)
            // Stored normalized: lowercased, without a trailing slash, duplicates folded.
            let normalized = try await api.admin(.patch, path, ["allowedOrigins": ["HTTPS://B.Example/", "https://b.example", "http://[::1]:8080"]])
            #expect(normalized.body["allowedOrigins"] == ["https://b.example", "http://[::1]:8080"])
        }
    }
}
