import Foundation
import Hummingbird
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7 server API: authentication, users and tokens.
@Suite(.redis) struct AuthTests {
    @Test func missingOrWrongKeyIsUnauthorized() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            for key in [nil, "", "wrong", "sk_" + String(repeating: "0", count: 48), api.adminKey] as [String?] {
                expectError(try await api.raw(.get, "/v1/apps/\(app.appId)/users/alice", key: key), 401, "UNAUTHORIZED")
                expectError(try await api.raw(.put, "/v1/apps/\(app.appId)/users/bob", key: key, body: "{}"), 401, "UNAUTHORIZED")
                expectError(try await api.raw(.get, "/v1/apps/\(app.appId)/users?status=online", key: key), 401, "UNAUTHORIZED")
            }
            // Not a Bearer credential.
            var headers: HTTPFields = [:]
            headers[.authorization] = "Basic \(app.apiKey)"
            let basic = try await api.client.execute(uri: "/v1/apps/\(app.appId)/users/alice", method: .get, headers: headers, body: nil) {
                Int($0.status.code)
            }
            #expect(basic == 401)
            expectError(try await app.call(.get, "/users/bob"), 404, "USER_NOT_FOUND")
        }
    }

    @Test func anotherAppsKeyIsForbidden() async throws {
        try await withStatusd { api in
            let first = try await api.createApp(config: premiumConfig)
            let second = try await api.createApp(config: premiumConfig)
            try await first.createUsers(["alice", "bob"])
            let foreign = second.apiKey
            expectError(try await first.call(.get, "/users/alice", key: foreign), 403, "FORBIDDEN")
            expectError(try await first.call(.put, "/users/carol", [:], key: foreign), 403, "FORBIDDEN")
            expectError(try await first.call(.put, "/users/alice/status", ["customStatus": "x"], key: foreign), 403, "FORBIDDEN")
            expectError(try await first.call(.post, "/status/query", ["userIds": ["alice"]], key: foreign), 403, "FORBIDDEN")
            expectError(try await first.call(.post, "/users/alice/devices/d1/login", ["platform": "web"], key: foreign), 403, "FORBIDDEN")
            // Nothing was written through the foreign key.
            expectError(try await first.call(.get, "/users/carol"), 404, "USER_NOT_FOUND")
            #expect(try await first.ownStatus("alice")["statusType"].string == "unlogined")
            #expect(!(try await first.ownStatus("alice")).has("customStatus"))
        }
    }

    @Test func badAppIdInThePathIsInvalidUserId() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            expectError(try await api.raw(.get, "/v1/apps/bad.app/users/alice", key: app.apiKey), 400, "INVALID_USER_ID")
            expectError(
                try await api.raw(.get, "/v1/apps/\(String(repeating: "a", count: 65))/users/alice", key: app.apiKey),
                400,
                "INVALID_USER_ID"
            )
        }
    }
}

@Suite(.redis) struct UsersAPITests {
    @Test func putCreatesAndUpdatesProfiles() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let created = try await app.call(
                .put,
                "/users/alice",
                ["name": "Alice", "role": "admin", "tags": ["a", "b"], "metadata": ["team": "blue", "level": 3]]
            )
            #expect(created.status == 200)
            #expect(created.body["userId"].string == "alice")
            #expect(created.body["name"].string == "Alice")
            #expect(created.body["role"].string == "admin")
            #expect(created.body["tags"].strings == ["a", "b"])
            #expect(created.body["metadata"] == ["team": "blue", "level": 3])

            let fetched = try await app.call(.get, "/users/alice")
            #expect(fetched.status == 200)
            #expect(fetched.body["name"].string == "Alice")
            #expect(fetched.body["role"].string == "admin")
            #expect(fetched.body["tags"].strings == ["a", "b"])
            #expect(fetched.body["metadata"] == ["team": "blue", "level": 3])

            let updated = try await app.call(.put, "/users/alice", ["name": "Alice B", "role": "moderator", "tags": ["c"], "metadata": ["x": true]])
            #expect(updated.status == 200)
            let again = try await app.call(.get, "/users/alice")
            #expect(again.body["name"].string == "Alice B")
            #expect(again.body["role"].string == "moderator")
            #expect(again.body["tags"].strings == ["c"])
            #expect(again.body["metadata"] == ["x": true])
        }
    }

    @Test func emptyProfileIsAUser() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let created = try await app.call(.put, "/users/bob@example.com", [:])
            #expect(created.status == 200)
            #expect(created.body["userId"].string == "bob@example.com")
            #expect(try await app.call(.get, "/users/bob@example.com").status == 200)
            #expect(try await app.ownStatus("bob@example.com")["statusType"].string == "unlogined")
        }
    }

    @Test func invalidProfileIsInvalidRequest() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            expectError(try await app.call(.put, "/users/alice", ["name": 5]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.put, "/users/alice", ["tags": "a"]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.put, "/users/alice", ["metadata": "text"]), 400, "INVALID_REQUEST")
            expectError(try await app.raw(.put, "/v1/apps/\(app.appId)/users/alice", key: app.apiKey, body: "{nope"), 400, "INVALID_REQUEST")
            expectError(try await app.call(.get, "/users/alice"), 404, "USER_NOT_FOUND")
        }
    }

    @Test func badUserIdInThePathIsInvalidUserId() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            let long = String(repeating: "u", count: 129)
            for bad in [long, "a:b", "a+b", "a%20b", "%C3%A9"] {
                expectError(try await app.call(.put, "/users/\(bad)", [:]), 400, "INVALID_USER_ID")
                expectError(try await app.call(.get, "/users/\(bad)"), 400, "INVALID_USER_ID")
                expectError(try await app.call(.put, "/users/\(bad)/status", ["customStatus": "x"]), 400, "INVALID_USER_ID")
                expectError(try await app.query(bad, ["alice"]), 400, "INVALID_USER_ID")
            }
            // A 128-byte id is fine.
            #expect(try await app.call(.put, "/users/\(String(repeating: "u", count: 128))", [:]).status == 200)
            // Bad ids in bodies too.
            expectError(try await app.query("alice", ["alice", "bad id"]), 400, "INVALID_USER_ID")
            expectError(try await app.subscribe("alice", ["ok", long]), 400, "INVALID_USER_ID")
            expectError(try await app.unsubscribe("alice", ["a:b"]), 400, "INVALID_USER_ID")
            expectError(try await app.call(.put, "/users/alice/friends", ["userIds": ["a b"]]), 400, "INVALID_USER_ID")
            expectError(try await app.call(.put, "/users/alice/blocks", ["userIds": ["a b"]]), 400, "INVALID_USER_ID")
            expectError(try await app.call(.post, "/status/query", ["userIds": ["alice", "é"]]), 400, "INVALID_USER_ID")
        }
    }

    @Test func deleteRemovesTheUser() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            #expect(try await app.setStatus("alice", "busy").status == 200)
            #expect(try await app.login("alice", "phone").status == 200)
            #expect(try await app.subscribe("bob", ["alice"]).status == 200)
            #expect(try await app.call(.put, "/users/alice/friends", ["userIds": ["bob"]]).status == 200)

            #expect(try await app.call(.delete, "/users/alice").status == 204)
            expectError(try await app.call(.get, "/users/alice"), 404, "USER_NOT_FOUND")
            expectError(try await app.call(.delete, "/users/alice"), 404, "USER_NOT_FOUND")
            expectError(try await app.query("alice", ["alice"]), 404, "USER_NOT_FOUND")
            let seenByBob = try await app.query("bob", ["alice"])
            #expect(seenByBob.body["statuses"].array.isEmpty)
            #expect(seenByBob.body["failures"] == [["userId": "alice", "code": "USER_NOT_FOUND"]])
            #expect(try await app.call(.get, "/users/bob/friends").body["userIds"].strings.isEmpty)
            #expect(!(try await app.call(.get, "/users?status=online").body["users"].array.contains { $0["userId"] == "alice" }))
            // Created again, alice starts from nothing.
            try await app.createUsers(["alice"])
            let fresh = try await app.ownStatus("alice")
            #expect(fresh["statusType"].string == "unlogined")
            #expect(!fresh.has("customStatus"))
            #expect(fresh["onlineDevices"].array.isEmpty)
        }
    }

    @Test func everyUserScopedEndpointButPutNeedsTheUser() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            let ghost = "ghost"
            let requests: [(HTTPRequest.Method, String, JSONValue?)] = [
                (.get, "/users/\(ghost)", nil),
                (.delete, "/users/\(ghost)", nil),
                (.post, "/users/\(ghost)/tokens", ["ttlSeconds": 60]),
                (.put, "/users/\(ghost)/friends", ["userIds": ["alice"]]),
                (.delete, "/users/\(ghost)/friends", ["userIds": ["alice"]]),
                (.get, "/users/\(ghost)/friends", nil),
                (.put, "/users/\(ghost)/blocks", ["userIds": ["alice"]]),
                (.delete, "/users/\(ghost)/blocks", ["userIds": ["alice"]]),
                (.get, "/users/\(ghost)/blocks", nil),
                (.put, "/users/\(ghost)/status", ["customStatus": "x"]),
                (.post, "/users/\(ghost)/status/query", ["userIds": [.string(ghost)]]),
                (.post, "/users/\(ghost)/status/query", ["userIds": ["alice"]]),
                (.post, "/users/\(ghost)/subscriptions", ["userIds": ["alice"]]),
                (.delete, "/users/\(ghost)/subscriptions", ["userIds": ["alice"]]),
                (.delete, "/users/\(ghost)/subscriptions", nil),
                (.get, "/users/\(ghost)/subscriptions", nil),
                (.post, "/users/\(ghost)/devices/d1/login", ["platform": "web"]),
                (.post, "/users/\(ghost)/devices/d1/heartbeat", nil),
                (.post, "/users/\(ghost)/devices/d1/logout", nil),
                (.post, "/users/\(ghost)/kick", nil),
                (.post, "/users/\(ghost)/kick", ["deviceId": "d1"]),
            ]
            for (method, path, body) in requests {
                let response = try await app.call(method, path, body)
                expectError(response, 404, "USER_NOT_FOUND")
                #expect(response.status == 404, "\(method) \(path)")
            }
            // None of these created the user.
            expectError(try await app.call(.get, "/users/\(ghost)"), 404, "USER_NOT_FOUND")
            #expect(try await app.call(.get, "/users/alice/friends").body["userIds"].strings.isEmpty)
        }
    }

    @Test func tokensAreHS256JWTs() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let before = Int64(Date().timeIntervalSince1970)
            let response = try await app.call(.post, "/users/alice/tokens", [:])
            let after = Int64(Date().timeIntervalSince1970)
            #expect(response.status == 200)
            let token = try #require(response.body["token"].string)
            let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            try #require(parts.count == 3)
            let header = try Self.decodeSegment(parts[0])
            #expect(header["alg"].string == "HS256")
            let claims = try Self.decodeSegment(parts[1])
            #expect(claims["sub"].string == "alice")
            #expect(claims["app"].string == app.appId)
            let exp = try #require(claims["exp"].int)
            #expect(exp >= before + 86_400 && exp <= after + 86_400 + 1)
            #expect(response.body["expiresAt"].int == exp * 1000)
            #expect(!parts[2].isEmpty)
        }
    }

    @Test func tokenTTLIsHonoured() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let now = Int64(Date().timeIntervalSince1970)
            let response = try await app.call(.post, "/users/alice/tokens", ["ttlSeconds": 60])
            let payload = try #require(response.body["token"].string?.split(separator: ".").dropFirst().first.map(String.init))
            let exp = try #require(try Self.decodeSegment(payload)["exp"].int)
            #expect(exp >= now + 59 && exp <= now + 62)
            #expect(response.body["expiresAt"].int == exp * 1000)
            // No body at all is the default TTL.
            let noBody = try await app.call(.post, "/users/alice/tokens")
            #expect(noBody.status == 200)
            let expiresAt = try #require(noBody.body["expiresAt"].int)
            #expect(abs(expiresAt / 1000 - (now + 86_400)) <= 2)
            expectError(try await app.call(.post, "/users/alice/tokens", ["ttlSeconds": "long"]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.post, "/users/alice/tokens", ["ttlSeconds": 0]), 400, "INVALID_REQUEST")
        }
    }

    static func decodeSegment(_ segment: String) throws -> JSONValue {
        var base64 = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let data = try #require(Data(base64Encoded: base64))
        return try JSONDecoder().decode(JSONValue.self, from: data)
    }
}
