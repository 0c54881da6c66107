import Foundation
import Hummingbird
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7 request hygiene for paths: an empty segment never runs another route, and ids are percent-decoded once,
/// then validated.
@Suite(.redis) struct EmptyPathSegmentTests {
    /// Before the rule, each of these ran the route one segment shorter, for a user named after the last segment.
    @Test func anEmptyUserIdIsRefusedAndChangesNothing() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "status", "friends", "blocks"])
            expectOK(try await app.call(.put, "/users/status", ["name": "Status"]))
            let attempts: [(HTTPRequest.Method, String, JSONValue?)] = [
                (.put, "/users//status", ["customStatus": "hi"]),
                (.put, "/users//friends", ["userIds": ["alice"]]),
                (.delete, "/users//friends", ["userIds": ["alice"]]),
                (.put, "/users//blocks", ["userIds": ["alice"]]),
                (.delete, "/users//blocks", ["userIds": ["alice"]]),
                (.get, "/users//subscriptions", nil),
                (.put, "/users/alice/", ["name": "trailing"]),
                (.get, "/users/alice/", nil),
                (.post, "/users/alice/devices//login", ["platform": "web"]),
            ]
            for (method, path, body) in attempts {
                expectError(try await app.call(method, path, body), 400, "INVALID_USER_ID")
            }
            #expect(try await app.call(.get, "/users/status").body["name"] == "Status")
            #expect(try await app.call(.get, "/users/friends").status == 200)
            #expect(try await app.call(.get, "/users/blocks").status == 200)
            #expect(!(try await app.call(.get, "/users/alice")).body.has("name"))
            #expect(try await app.call(.get, "/users/alice/friends").body["userIds"] == [])
            #expect(try await app.ownStatus("alice")["statusType"] == "unlogined")
        }
    }

    @Test func adminAndOtherPathsWithEmptySegments() async throws {
        try await withStatusd { api in
            let body = #"{"appId": "slashed"}"#
            expectError(try await api.raw(.post, "/v1/apps/", key: api.adminKey, body: body), 400, "INVALID_USER_ID")
            expectError(try await api.raw(.post, "/v1//apps", key: api.adminKey, body: body), 400, "INVALID_USER_ID")
            expectError(try await api.admin(.get, "/v1/apps/slashed"), 404, "APP_NOT_FOUND")
            expectError(try await api.raw(.get, "//healthz", key: nil), 404, "NOT_FOUND")
            expectError(try await api.raw(.get, "/healthz/", key: nil), 404, "NOT_FOUND")
            #expect(try await api.raw(.get, "/healthz", key: nil).status == 200)
        }
    }

    /// The bytes as a client sends them, through the live server.
    @Test func onTheWire() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["status"])
            let body = #"{"customStatus":"hi"}"#
            let response = try await RawHTTP.exchange(
                port: api.client.port!,
                "PUT /v1/apps/\(app.appId)/users//status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.apiKey)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
            )
            #expect(response.status == 400)
            #expect(response.body["error"]["code"] == "INVALID_USER_ID")
        }
    }

    @Test func segmentScan() {
        for path in ["//", "/a//b", "/a/", "/v1/apps/x/users//status", "//healthz"] {
            #expect(EmptyPathSegmentMiddleware<StatusRequestContext>.hasEmptySegment(path), "\(path)")
        }
        #expect(EmptyPathSegmentMiddleware<StatusRequestContext>.hasEmptySegment("/a/?x=1"))
        for path in ["/", "/a", "/a/b", "/v1/apps/x/users/y/status", "/a?b=//", "/?x=/", "/v1/apps/x/users?cursor=a//"] {
            #expect(!EmptyPathSegmentMiddleware<StatusRequestContext>.hasEmptySegment(path), "\(path)")
        }
    }
}

@Suite(.redis) struct PercentDecodedPathTests {
    @Test func aUserIdIsDecodedOnceThenValidated() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let created = expectOK(try await app.call(.put, "/users/a%40b", ["name": "At"]))
            #expect(created["userId"] == "a@b")
            #expect(try await app.call(.get, "/users/a@b").body["name"] == "At")
            #expect(try await app.call(.get, "/users/%61%40%62").body["userId"] == "a@b")
            let status = expectOK(try await app.call(.put, "/users/a%40b/status", ["customStatus": "encoded"]))
            #expect(status["userId"] == "a@b")
            #expect(try await app.ownStatus("a@b")["customStatus"] == "encoded")
            // Decoded once: `%2540` is the three characters `%40`, not a userId.
            for bad in ["a%2540b", "a%", "a%4", "a%zz", "a%C3%A9", "a%FF", "a%2Fb", "%20"] {
                expectError(try await app.call(.get, "/users/\(bad)"), 400, "INVALID_USER_ID")
                expectError(try await app.call(.put, "/users/\(bad)/status", ["customStatus": "x"]), 400, "INVALID_USER_ID")
            }
        }
    }

    @Test func appIdsAndDeviceIdsAreDecodedToo() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let encodedApp = app.appId.utf8.map { String(format: "%%%02X", $0) }.joined()
            let profile = try await api.raw(.get, "/v1/apps/\(encodedApp)/users/alice", key: app.apiKey)
            #expect(expectOK(profile)["userId"] == "alice")
            #expect(expectOK(try await api.admin(.get, "/v1/apps/\(encodedApp)"))["appId"] == .string(app.appId))
            expectError(try await api.admin(.get, "/v1/apps/%zz"), 400, "INVALID_USER_ID")
            expectError(try await api.raw(.get, "/v1/apps/%zz/users/alice", key: app.apiKey), 400, "INVALID_USER_ID")
            let login = expectOK(try await app.call(.post, "/users/alice/devices/d%2D1/login", ["platform": "web"]))
            #expect(login["onlineDevices"][0]["deviceId"] == "d-1")
            expectError(try await app.call(.post, "/users/alice/devices/d%2E1/login", ["platform": "web"]), 400, "INVALID_USER_ID")
            expectError(try await app.call(.post, "/users/alice/devices/d%/heartbeat"), 400, "INVALID_USER_ID")
        }
    }
}
