import Foundation
import Hummingbird
import HummingbirdTesting
import StatusCore
import Testing

@testable import StatusServer

/// Answers for requests no route takes: 405 with `Allow` for a known path, 404 for an unknown one, and the plain
/// GET of the WebSocket path.
@Suite(.redis) struct RoutingTests {
    @Test func aKnownPathWithAnotherMethodIs405WithTheAllowedMethods() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let wrong = try await app.call(.patch, "/users/alice/subscriptions")
            expectError(wrong, 405, "METHOD_NOT_ALLOWED")
            #expect(wrong.headers[.allow] == "DELETE, GET, POST")
            let trace = try await api.raw(.init("TRACE")!, "/openapi.json", key: nil)
            expectError(trace, 405, "METHOD_NOT_ALLOWED")
            #expect(trace.headers[.allow] == "GET")
            // Captured segments match any value; the number of segments must match.
            #expect(try await api.raw(.post, "/v1/apps/x/users/y", key: nil).headers[.allow] == "DELETE, GET, PUT")
            expectError(try await api.raw(.get, "/v1/apps/x/users/y/nothing", key: nil), 404, "NOT_FOUND")
            expectError(try await api.raw(.get, "/nowhere", key: nil), 404, "NOT_FOUND")
            // A route's own answers are untouched: an unknown user is still USER_NOT_FOUND.
            expectError(try await app.call(.get, "/users/ghost"), 404, "USER_NOT_FOUND")
        }
    }

    @Test func aPlainGetOfTheWebSocketPathIs400AndClosesTheConnection() async throws {
        try await withStatusd { api in
            let response = try await api.raw(.get, "/v1/connect?deviceId=d1&platform=web", key: nil)
            expectError(response, 400, "INVALID_REQUEST")
            #expect(response.headers[.connection] == "close")
        }
    }
}

/// `Upgrade` headers that ask for no WebSocket are ignored (RFC 9110 §7.8), not left unanswered.
@Suite(.redis) struct IgnoredUpgradeTests {
    @Test func aRequestAskingForAnotherProtocolIsAnsweredAsPlainHTTP() async throws {
        try await withStatusd(.live) { api in
            let port = api.client.port!
            for headers in [["Upgrade": "h2c", "Connection": "close"], ["Upgrade": "0", "Connection": "close"]] {
                let response = try await RawHTTP.get(port: port, path: "/healthz", headers: headers)
                #expect(response.status == 200, "\(headers)")
                #expect(response.body["status"].string == "ok")
            }
            // A WebSocket upgrade of another path is still refused, not served.
            let refused = try await RawHTTP.get(
                port: port,
                path: "/healthz",
                headers: [
                    "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                ]
            )
            #expect(refused.status == 404)
        }
    }
}

/// RFC 6455 §4.2.1: an upgrade whose `Sec-WebSocket-Key` is not 16 bytes of base64 is refused with 400.
@Suite(.redis) struct WebSocketKeyTests {
    @Test func anUpgradeWithABadKeyIsRefused() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let token = try await app.token(for: "alice")
            for key in ["", "abc", "AAAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAB=="] {
                let headers = [
                    "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": key,
                    "Authorization": "Bearer \(token)",
                ]
                let response = try await RawHTTP.get(port: api.client.port!, path: "/v1/connect?deviceId=d1&platform=web", headers: headers)
                #expect(response.status == 400, "key \(key)")
                #expect(response.body["error"]["code"].string == "INVALID_REQUEST")
            }
            // RFC 6455 §4.1: the upgrade is a GET.
            let valid = [
                "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                "Authorization": "Bearer \(token)",
            ]
            let put = try await RawHTTP.get(port: api.client.port!, path: "/v1/connect?deviceId=d1&platform=web", headers: valid, method: "PUT")
            #expect(put.status == 405 && put.body["error"]["code"].string == "METHOD_NOT_ALLOWED")
            // RFC 6455 §4.2.1: the Connection header must list Upgrade.
            let headers = [
                "Connection": "keep-alive", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                "Authorization": "Bearer \(token)",
            ]
            let response = try await RawHTTP.get(port: api.client.port!, path: "/v1/connect?deviceId=d1&platform=web", headers: headers)
            #expect(response.status == 400)
        }
    }
}
