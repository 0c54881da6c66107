import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §9 metrics: each node counts its own. Two nodes built in one process (as tests and embedders do) have a registry
/// each, so `/metrics` of one never shows the other's requests, refusals or Redis connections.
@Suite(.redis) struct NodeMetricsTests {
    @Test func twoNodesInOneProcessCountApart() async throws {
        let adminKey = "admin-" + UUID().uuidString
        try await withStatusd(adminKey: adminKey) { busy in
            try await withStatusd(adminKey: adminKey) { quiet in
                // A low quota, so that node A refuses calls too (statusd_rate_limited_total).
                let config: JSONValue = ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 2, "windowSeconds": 60]]
                let app = try await busy.createApp(config: config)
                try await app.createUsers(["alice", "bob"])
                for _ in 0..<2 { _ = try await app.call(.put, "/users/alice/status", ["customStatus": "busy"]) }
                var refused = 0
                for _ in 0..<5 where try await app.call(.post, "/users/alice/status/query", ["userIds": ["bob"]]).status == 429 {
                    refused += 1
                }
                #expect(refused == 3)
                let busyText = try await busy.metricsText()
                let quietText = try await quiet.metricsText()
                let putSeries =
                    #"hb_requests{http_route="/v1/apps/{appId}/users/{userId}/status","#
                    + #"http_request_method="PUT",http_response_status_code="200"} "#
                #expect(busyText.contains(putSeries + "2"), "node A counts its own two writes, nobody else's")
                #expect(!quietText.contains(putSeries), "node B served no status write")
                #expect(Self.sample(busyText, "statusd_rate_limited_total") == refused)
                #expect(Self.sample(quietText, "statusd_rate_limited_total") == 0)
                // Each node's Redis client records into its node's registry.
                #expect(Self.sample(busyText, "redis_client_connects_total") > 0)
                #expect(quietText.contains("redis_client_connects_total"))
            }
        }
    }

    /// The value of an unlabelled sample of Prometheus text (0 when absent).
    static func sample(_ text: String, _ name: String) -> Int {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Int(Double(line.dropFirst(name.count + 1)) ?? 0)
        }
        return 0
    }
}
