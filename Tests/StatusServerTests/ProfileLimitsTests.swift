import Foundation
import Hummingbird
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §1 profile limits on `PUT /users/{userId}`: past any of them `INVALID_REQUEST`, and nothing changes.
@Suite(.redis) struct ProfileLimitsTests {
    /// `{"metadata": {"k": {"k": ... 1}}}` with the metadata object nested `depth` levels.
    private func nestedMetadata(depth: Int) -> String {
        "{\"metadata\": " + String(repeating: "{\"k\": ", count: depth) + "1" + String(repeating: "}", count: depth) + "}"
    }

    @Test func valuesAtTheLimitsAreStored() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let tags = (0..<32).map { _ in JSONValue.string(String(repeating: "t", count: 64)) }
            let body: JSONValue = [
                "name": .string(String(repeating: "é", count: 128)), "role": .string(String(repeating: "r", count: 64)), "tags": .array(tags),
                "lastSeenPrivacy": "friends",
            ]
            let stored = expectOK(try await app.call(.put, "/users/alice", body))
            #expect(stored["tags"].strings.count == 32)
            #expect(stored["lastSeenPrivacy"].string == "friends")
            expectOK(try await api.raw(.put, "/v1/apps/\(app.appId)/users/bob", key: app.apiKey, body: nestedMetadata(depth: 16)))
            let padding = String(repeating: "x", count: 8 * 1024 - #"{"p":""}"#.utf8.count)
            expectOK(try await app.call(.put, "/users/carol", ["metadata": ["p": .string(padding)]]))
        }
    }

    @Test func valuesPastTheLimitsAreRefusedAndChangeNothing() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let original = expectOK(try await app.call(.put, "/users/alice", ["name": "Alice", "metadata": ["team": "blue"]]))
            let padding = String(repeating: "x", count: 8 * 1024 - #"{"p":""}"#.utf8.count + 1)
            let refused: [JSONValue] = [
                ["name": .string(String(repeating: "a", count: 257))],
                ["role": .string(String(repeating: "r", count: 65))],
                ["tags": .array((0..<33).map { JSONValue.string("t\($0)") })],
                ["tags": [.string(String(repeating: "t", count: 65))]],
                ["metadata": ["p": .string(padding)]],
                ["metadata": "not an object"],
                ["lastSeenPrivacy": "strangers"],
                ["lastSeenPrivacy": 1],
            ]
            for body in refused {
                expectError(try await app.call(.put, "/users/alice", body), 400, "INVALID_REQUEST")
                expectError(try await app.call(.put, "/users/newcomer", body), 400, "INVALID_REQUEST")
            }
            for depth in [17, 100, 509, 510, 511, 600] {
                let response = try await api.raw(.put, "/v1/apps/\(app.appId)/users/alice", key: app.apiKey, body: nestedMetadata(depth: depth))
                expectError(response, 400, "INVALID_REQUEST")
            }
            let now = expectOK(try await app.call(.get, "/users/alice"))
            #expect(now["name"] == original["name"])
            #expect(now["metadata"] == original["metadata"])
            #expect(now["updatedAt"] == original["updatedAt"])
            expectError(try await app.call(.get, "/users/newcomer"), 404, "USER_NOT_FOUND")
            let listing = expectOK(try await app.call(.get, "/users"))
            #expect(listing["users"].array.count == 1)
        }
    }

    @Test func aHundredThousandLevelsAreRefusedQuicklyOnEveryBody() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
            let objects = String(repeating: "{\"a\":", count: 100_000) + "1" + String(repeating: "}", count: 100_000)
            let base = "/v1/apps/\(app.appId)"
            let start = ContinuousClock.now
            for body in ["{\"metadata\": \(deep)}", "{\"metadata\": \(objects)}", objects] {
                expectError(try await api.raw(.put, base + "/users/alice", key: app.apiKey, body: body), 400, "INVALID_REQUEST")
                expectError(try await api.raw(.post, base + "/users/alice/subscriptions", key: app.apiKey, body: body), 400, "INVALID_REQUEST")
                expectError(try await api.raw(.patch, "/v1/apps/\(app.appId)/config", key: api.adminKey, body: body), 400, "INVALID_REQUEST")
                expectError(try await api.raw(.post, "/v1/apps", key: api.adminKey, body: body), 400, "INVALID_REQUEST")
            }
            #expect(ContinuousClock.now - start < .seconds(3))
            expectOK(try await app.call(.get, "/users"))
        }
    }

    @Test func lastSeenPrivacyIsStoredReplacedAndReturned() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            for value in ["everyone", "friends", "nobody"] {
                #expect(expectOK(try await app.call(.put, "/users/alice", ["lastSeenPrivacy": .string(value)]))["lastSeenPrivacy"].string == value)
                #expect(expectOK(try await app.call(.get, "/users/alice"))["lastSeenPrivacy"].string == value)
            }
            // PUT replaces the profile: absent means the app default again.
            #expect(!expectOK(try await app.call(.put, "/users/alice", [:])).has("lastSeenPrivacy"))
        }
    }

    @Test func rolesScopePastTheLimitsRefusesTheUpgrade() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            let token = try #require(expectOK(try await app.call(.post, "/users/alice/tokens", [:]))["token"].string)
            let headers = [
                "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                "Authorization": "Bearer \(token)",
            ]
            let roles = (0..<33).map { "r\($0)" }.joined(separator: ",")
            for presence in ["roles:\(roles)", "roles:a%20b", "roles:" + String(repeating: "a", count: 65)] {
                let path = "/v1/connect?deviceId=d1&platform=web&presence=\(presence)"
                let response = try await RawHTTP.get(port: api.client.port!, path: path, headers: headers)
                #expect(response.status == 400)
                #expect(response.body["error"]["code"].string == "INVALID_REQUEST")
            }
        }
    }
}
