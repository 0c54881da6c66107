import Foundation
import Hummingbird
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7: every JSON body is strict RFC 8259 in UTF-8 with only the members its route knows, or `INVALID_REQUEST`
/// and nothing changes; SPEC §4: setSelfStatus changes only the fields it is given.
@Suite(.redis) struct RequestBodyHygieneTests {
    /// A user alice online on device d1, friend of bob, subscribed to bob, blocking nobody, custom status "busy".
    private func prepared(_ api: APIClient) async throws -> APIClient {
        let app = try await api.createApp(config: premiumConfig)
        try await app.createUsers(["alice", "bob", "carol"])
        expectOK(try await app.call(.put, "/users/alice", ["name": "Alice"]))
        expectOK(try await app.login("alice", "d1"))
        expectOK(try await app.call(.put, "/users/alice/friends", ["userIds": ["bob"]]))
        expectOK(try await app.subscribe("alice", ["bob"]))
        expectOK(try await app.setStatus("alice", "busy"))
        return app
    }

    /// Nothing of ``prepared(_:)`` moved.
    private func expectUnchanged(_ app: APIClient, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let status = try await app.ownStatus("alice")
        #expect(status["customStatus"] == "busy", sourceLocation: sourceLocation)
        #expect(status["onlineDevices"].array.count == 1, sourceLocation: sourceLocation)
        #expect(try await app.call(.get, "/users/alice").body["name"] == "Alice", sourceLocation: sourceLocation)
        #expect(try await app.call(.get, "/users/alice/friends").body["userIds"] == ["bob"], sourceLocation: sourceLocation)
        #expect(try await app.call(.get, "/users/alice/blocks").body["byMe"] == [], sourceLocation: sourceLocation)
        #expect(try await app.subscriptions("alice") == ["bob"], sourceLocation: sourceLocation)
    }

    @Test func unknownFieldsAreRefusedOnEveryRouteWithABody() async throws {
        try await withStatusd { api in
            let app = try await prepared(api)
            let misspelt: [(HTTPRequest.Method, String, String)] = [
                (.put, "/users/alice", #"{"nmae":"Eve"}"#),
                (.put, "/users/alice/status", #"{"customStatsu":"x"}"#),
                (.put, "/users/alice/status", #"{"customStatus":"x","extra":1}"#),
                (.post, "/users/alice/kick", #"{"de8iceId":"d1"}"#),
                (.post, "/users/alice/tokens", #"{"ttlSecond":60}"#),
                (.post, "/users/alice/status/query", #"{"userIds":["bob"],"x":1}"#),
                (.post, "/users/alice/subscriptions", #"{"userIds":["carol"],"x":1}"#),
                (.delete, "/users/alice/subscriptions", #"{"userIDs":["bob"]}"#),
                (.put, "/users/alice/friends", #"{"userIds":["carol"],"x":1}"#),
                (.delete, "/users/alice/friends", #"{"userids":["bob"]}"#),
                (.put, "/users/alice/blocks", #"{"userIds":["carol"],"x":1}"#),
                (.delete, "/users/alice/blocks", #"{"x":1}"#),
                (.post, "/status/query", #"{"userIds":["alice"],"detial":true}"#),
                (.post, "/users/alice/devices/d2/login", #"{"platform":"web","x":1}"#),
                // The same member twice is refused too: which one would count?
                (.put, "/users/alice/status", #"{"customStatus":"x","customStatus":"y"}"#),
            ]
            for (method, path, body) in misspelt {
                expectError(try await api.raw(method, "/v1/apps/\(app.appId)\(path)", key: app.apiKey, body: body), 400, "INVALID_REQUEST")
            }
            try await expectUnchanged(app)
            let created = try await api.raw(.post, "/v1/apps", key: api.adminKey, body: #"{"appId":"misspelt","confg":{}}"#)
            expectError(created, 400, "INVALID_REQUEST")
            expectError(try await api.admin(.get, "/v1/apps/misspelt"), 404, "APP_NOT_FOUND")
        }
    }

    @Test func onlyStrictJSONInUTF8IsAccepted() async throws {
        try await withStatusd { api in
            let app = try await prepared(api)
            let malformed: [(HTTPRequest.Method, String, [UInt8])] = [
                (.put, "/users/alice/friends", Array(#"{"userIds": ["carol",]}"#.utf8)),
                (.delete, "/users/alice/friends", Array(#"{"userIds": ["bob"],}"#.utf8)),
                (.put, "/users/alice/status", Array(#"{"customStatus":"x"}"#.data(using: .utf16LittleEndian)!)),
                (.put, "/users/alice/status", Array(#"{"customStatus":"x"}"#.data(using: .utf16)!)),
                (.put, "/users/alice/status", Array(#"{"customStatus":"x"}"#.data(using: .utf32)!)),
                (.put, "/users/alice/status", [0xEF, 0xBB, 0xBF] + Array(#"{"customStatus":"x"}"#.utf8)),
                (.put, "/users/alice/status", Array(#"{"customStatus":"x"#.utf8) + [0xFF] + Array(#""}"#.utf8)),
                (.put, "/users/alice/status", Array(#"{"customStatus":"\uD800"}"#.utf8)),
                (.put, "/users/alice/status", Array(#"{"customStatus":"\x41"}"#.utf8)),
                (.put, "/users/alice/status", Array(#"{"customStatus":"a"#.utf8) + [0x01] + Array(#""}"#.utf8)),
                // Junk inside members no route reads.
                (.put, "/users/alice", Array(#"{"name":"Eve","metadata":{"n":01}}"#.utf8)),
                (.put, "/users/alice", Array(#"{"name":"Eve","metadata":{"n":[1,2,]}}"#.utf8)),
                (.post, "/users/alice/tokens", Array(#"{"ttlSeconds":+60}"#.utf8)),
                (.post, "/users/alice/kick", Array(#"{"deviceId":"d1"} {}"#.utf8)),
                (.post, "/users/alice/kick", Array(#"{"deviceId":"d1",}"#.utf8)),
            ]
            for (method, path, body) in malformed {
                let response = try await api.client.execute(
                    uri: "/v1/apps/\(app.appId)\(path)",
                    method: method,
                    headers: [.authorization: "Bearer \(app.apiKey)", .contentType: "application/json"],
                    body: ByteBuffer(bytes: body)
                ) { response in
                    APIResponse(
                        status: Int(response.status.code),
                        headers: response.headers,
                        body: (try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: response.body))) ?? .null
                    )
                }
                expectError(response, 400, "INVALID_REQUEST")
            }
            try await expectUnchanged(app)
        }
    }

    @Test func setSelfStatusKeepsWhatItIsNotGiven() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let set = expectOK(try await app.setStatus("alice", "busy"))
            #expect(set["version"] == 1)
            let kept = expectOK(try await app.call(.put, "/users/alice/status", [:]))
            #expect(kept["customStatus"] == "busy")
            #expect(kept["version"] == 1)
            // Whitespace and an escaped form of the same shape keep it too.
            let spaced = try await api.raw(.put, "/v1/apps/\(app.appId)/users/alice/status", key: app.apiKey, body: " { } ")
            #expect(expectOK(spaced)["customStatus"] == "busy")
            let cleared = expectOK(try await app.setStatus("alice", nil))
            #expect(!cleared.has("customStatus"))
            #expect(cleared["version"] == 2)
            expectOK(try await app.setStatus("alice", "back"))
            let emptied = expectOK(try await app.setStatus("alice", ""))
            #expect(!emptied.has("customStatus"))
            #expect(emptied["version"] == 4)
            // A kept field over the slow path (escapes take JSONDecoder) means the same.
            expectOK(try await app.setStatus("alice", "again"))
            let escaped = try await api.raw(
                .put,
                "/v1/apps/\(app.appId)/users/alice/status",
                key: app.apiKey,
                body: #"{"custom\u0053tatus":"\u00e9"}"#
            )
            #expect(expectOK(escaped)["customStatus"] == "é")
            // No body at all is still refused.
            expectError(try await api.raw(.put, "/v1/apps/\(app.appId)/users/alice/status", key: app.apiKey), 400, "INVALID_REQUEST")
        }
    }

    @Test func aDeviceFrameWithoutCustomStatusKeepsIt() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "d1")) { device, _ in
                let set = try await device.request("setSelfStatus", ["customStatus": "busy"])
                #expect(set["result"]["customStatus"] == "busy")
                let kept = try await device.request("setSelfStatus")
                #expect(kept["ok"] == true)
                #expect(kept["result"]["customStatus"] == "busy")
                #expect(kept["result"]["version"] == set["result"]["version"])
                let misspelt = try await device.request("setSelfStatus", ["customStatsu": "x"])
                #expect(misspelt["error"]["code"] == "INVALID_REQUEST")
                let extra = try await device.request("heartbeat", ["customStatus": "x"])
                #expect(extra["error"]["code"] == "INVALID_REQUEST")
                try await device.sendRaw(#"{"id":"t","op":"setSelfStatus","customStatus":"x",}"#)
                let trailing = try await device.next { $0["id"] == "t" }
                #expect(trailing["error"]["code"] == "INVALID_REQUEST")
                #expect(try await app.ownStatus("alice")["customStatus"] == "busy")
                let cleared = try await device.request("setSelfStatus", ["customStatus": nil])
                #expect(cleared["ok"] == true)
                #expect(!cleared["result"].has("customStatus"))
            }
        }
    }
}
