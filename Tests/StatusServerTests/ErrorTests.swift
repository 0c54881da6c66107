import Foundation
import Hummingbird
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7 error bodies and §1 request limits.
@Suite(.redis) struct ErrorTests {
    @Test func malformedJSONIsInvalidRequest() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            let base = "/v1/apps/\(app.appId)"
            for body in ["{", "not json", "{\"userIds\": [\"a\"", "[1, 2", "{'userIds': []}", "{\"userIds\": [\"a\"]} trailing"] {
                expectError(try await api.raw(.post, base + "/users/alice/status/query", key: app.apiKey, body: body), 400, "INVALID_REQUEST")
                expectError(try await api.raw(.post, base + "/users/alice/subscriptions", key: app.apiKey, body: body), 400, "INVALID_REQUEST")
                expectError(try await api.raw(.put, base + "/users/alice/status", key: app.apiKey, body: body), 400, "INVALID_REQUEST")
                expectError(try await api.raw(.post, base + "/status/query", key: app.apiKey, body: body), 400, "INVALID_REQUEST")
                expectError(try await api.raw(.post, "/v1/apps", key: api.adminKey, body: body), 400, "INVALID_REQUEST")
            }
        }
    }

    @Test func wrongTypesAreInvalidRequest() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            let wrong: [JSONValue] = [["userIds": "bob"], ["userIds": [1]], ["userIds": nil], ["userIds": ["bob": true]], "bob", ["bob"], 42]
            for body in wrong {
                expectError(try await app.call(.post, "/users/alice/status/query", body), 400, "INVALID_REQUEST")
                expectError(try await app.call(.post, "/users/alice/subscriptions", body), 400, "INVALID_REQUEST")
                expectError(try await app.call(.post, "/status/query", body), 400, "INVALID_REQUEST")
                expectError(try await app.call(.put, "/users/alice/friends", body), 400, "INVALID_REQUEST")
            }
            expectError(try await app.call(.delete, "/users/alice/subscriptions", ["userIds": "bob"]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.post, "/users/alice/kick", ["deviceId": 7]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.post, "/users/alice/tokens", ["ttlSeconds": true]), 400, "INVALID_REQUEST")
            #expect(try await app.subscriptions("alice").isEmpty)
        }
    }

    @Test func bodyOver1MiBIsPayloadTooLarge() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            let padding = String(repeating: "x", count: 1 << 20)
            let big = "{\"customStatus\": \"hi\", \"padding\": \"\(padding)\"}"
            expectError(try await api.raw(.put, "/v1/apps/\(app.appId)/users/alice/status", key: app.apiKey, body: big), 413, "PAYLOAD_TOO_LARGE")
            let ids = "[" + Array(repeating: "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", count: 25_000).joined(separator: ",") + "]"
            expectError(
                try await api.raw(.post, "/v1/apps/\(app.appId)/status/query", key: app.apiKey, body: "{\"userIds\": \(ids)}"),
                413,
                "PAYLOAD_TOO_LARGE"
            )
            #expect(!(try await app.ownStatus("alice")).has("customStatus"))
            // Exactly 1 MiB is read (and then judged on its content); one byte more is not.
            // The padding is JSON whitespace: a member the route does not know would be refused (SPEC §7).
            func body(ofSize size: Int) -> String {
                let frame = "{\"customStatus\": \"hi\"}"
                let text = "{\"customStatus\": \"hi\"" + String(repeating: " ", count: size - frame.utf8.count) + "}"
                precondition(text.utf8.count == size)
                return text
            }
            let path = "/v1/apps/\(app.appId)/users/alice/status"
            expectError(try await api.raw(.put, path, key: app.apiKey, body: body(ofSize: (1 << 20) + 1)), 413, "PAYLOAD_TOO_LARGE")
            let exact = try await api.raw(.put, path, key: app.apiKey, body: body(ofSize: 1 << 20))
            #expect(exact.status == 200, "\(exact.body)")
            #expect(exact.body["customStatus"].string == "hi")
        }
    }

    @Test func unknownRouteIs404WithAnErrorBody() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            for path in ["/nope", "/v1", "/v1/apps/\(app.appId)/nothing", "/v1/apps/\(app.appId)/users/alice/unknown"] {
                let response = try await api.raw(.get, path, key: app.apiKey)
                #expect(response.status == 404, "\(path)")
                #expect(response.body["error"]["code"].string?.isEmpty == false, "\(path): \(response.body)")
                #expect(response.body["error"]["message"].string?.isEmpty == false, "\(path): \(response.body)")
            }
        }
    }

    @Test func errorBodiesHaveCodeAndMessage() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let responses = [
                try await api.raw(.get, "/v1/apps/\(app.appId)/users/alice", key: nil),
                try await app.call(.get, "/users/ghost"),
                try await app.query("alice", ["bob"]),
                try await app.call(.get, "/users?status=online&limit=0"),
                try await app.setStatus("alice", String(repeating: "x", count: 101)),
                try await api.admin(.post, "/v1/apps", ["appId": .string(app.appId)]),
            ]
            for response in responses {
                #expect(response.status >= 400)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                #expect(response.body["error"]["code"].string?.isEmpty == false, "\(response.body)")
                #expect(response.body["error"]["message"].string?.isEmpty == false, "\(response.body)")
            }
        }
    }

    @Test func healthEndpoints() async throws {
        try await withStatusd { api in
            let health = try await api.raw(.get, "/healthz", key: nil)
            let ready = try await api.raw(.get, "/readyz", key: nil)
            #expect(health.status == 200)
            #expect(ready.status == 200)
        }
    }
}
