import Foundation
import Hummingbird
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// SPEC §9 health, readiness and metrics; SPEC §7 `UNAVAILABLE` when Redis cannot be reached.
@Suite(.redis) struct OperationsEndpointsTests {
    @Test func metricsAreExportedInPrometheusText() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            for _ in 0..<21 { _ = try await app.call(.post, "/users/alice/status/query", ["userIds": ["bob"]]) }
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "d1")) { _, _ in
                // The node's counts are the operator's: without the admin key (or with an app's), 401.
                expectError(try await api.raw(.get, "/metrics", key: nil), 401, "UNAUTHORIZED")
                expectError(try await api.raw(.get, "/metrics", key: app.apiKey), 401, "UNAUTHORIZED")
                let text = try await api.metricsText()
                #expect(text.contains("statusd_connected_devices"))
                #expect(text.contains("statusd_rate_limited_total"))
                #expect(text.contains("statusd_events_delivered_total"))
                #expect(text.contains("statusd_local_online_users"))
                #expect(text.contains("redis_client_connects_total"))
                #expect(text.contains("http_server_request_duration"))
            }
        }
    }

    /// The per-route series count each request once, and a method statusd does not serve cannot make a series of its
    /// own (HTTP parsers accept dozens of methods, WebDAV's among them: a client could otherwise add series at will).
    /// The registry is the node's own (``NodeMetrics``), so no other test's requests are in it: counts are exact.
    @Test func requestSeriesCountRequestsAndBoundTheirMethods() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            func metrics() async throws -> [Substring] {
                let text = try await api.metricsText()
                return text.split(separator: "\n").filter { $0.hasPrefix("hb_requests{") }
            }
            let putSeries =
                #"hb_requests{http_route="/v1/apps/{appId}/users/{userId}/status","#
                + #"http_request_method="PUT",http_response_status_code="200"}"#
            func puts(_ series: [Substring]) -> Int {
                series.first { $0.hasPrefix(putSeries + " ") }.flatMap { Int($0.dropFirst(putSeries.count + 1)) } ?? 0
            }
            #expect(puts(try await metrics()) == 0)
            for _ in 0..<3 { _ = try await app.call(.put, "/users/alice/status", ["customStatus": "busy"]) }
            for method in ["PROPFIND", "REPORT"] {
                let odd = try await api.raw(HTTPRequest.Method(method)!, "/v1/apps/\(app.appId)/users/alice/status", key: app.apiKey)
                #expect(odd.status == 405)
            }
            let series = try await metrics()
            #expect(puts(series) == 3)
            #expect(!series.contains { $0.contains("PROPFIND") || $0.contains("REPORT") })
            #expect(series.contains { $0.contains("http_request_method=\"_OTHER\"") && $0.contains("\"405\"") })
        }
    }

    /// An operator listener (`--metrics-port`) serves `/metrics` without credentials, on its own address.
    @Test func theOperatorListenerServesMetricsWithoutCredentials() async throws {
        let port = try ChildNode.freePort()
        let configure: (inout ServerConfiguration) -> Void = { $0.metricsPort = port }
        try await withStatusd(.live, configure: configure) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            var text = ""
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline {
                if let (data, response) = try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/metrics")!),
                    (response as? HTTPURLResponse)?.statusCode == 200
                {
                    text = String(decoding: data, as: UTF8.self)
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(text.contains("statusd_connected_devices"))
            expectError(try await api.raw(.get, "/metrics", key: nil), 401, "UNAUTHORIZED")
        }
    }

    @Test func redisUnreachableIs503AndTheProcessStaysUp() async throws {
        let closedPort: (inout ServerConfiguration) -> Void = { configuration in
            configuration.redis = RedisConfiguration(endpoint: .tcp(host: "127.0.0.1", port: 1))
        }
        try await withStatusd(.router, configure: closedPort) { api in
            let health = try await api.raw(.get, "/healthz", key: nil)
            #expect(health.status == 200)
            let ready = try await api.raw(.get, "/readyz", key: nil)
            #expect(ready.status == 503)
            #expect(ready.body["error"]["code"].string == "UNAVAILABLE")
            let call = try await api.raw(.get, "/v1/apps/demo", key: api.adminKey)
            #expect(call.status == 503)
            #expect(call.body["error"]["code"].string == "UNAVAILABLE")
            let again = try await api.raw(.put, "/v1/apps/demo/users/alice", key: "sk_x", body: "{}")
            #expect(again.status == 503)
        }
    }
}
