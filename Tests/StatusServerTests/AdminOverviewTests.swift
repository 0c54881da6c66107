import Foundation
import Hummingbird
import HummingbirdTesting
import StatusCore
import Testing

@testable import StatusServer

/// The admin API's overview for operators and the console: `GET /v1/apps` and `GET /v1/apps/{appId}/stats`.
@Suite(.redis) struct AdminOverviewTests {
    @Test func appsAreListedSortedAndOnlyWithTheAdminKey() async throws {
        try await withStatusd { api in
            let first = try await api.createApp()
            let second = try await api.createApp()
            let listed = try await api.admin(.get, "/v1/apps")
            #expect(listed.status == 200)
            let ids = listed.body["appIds"].strings
            #expect(ids.contains(first.appId) && ids.contains(second.appId))
            #expect(ids == ids.sorted())
            #expect(try await api.admin(.delete, "/v1/apps/\(first.appId)").status == 204)
            #expect(!(try await api.admin(.get, "/v1/apps")).body["appIds"].strings.contains(first.appId))
            for key in [nil, "wrong", first.apiKey, second.apiKey] {
                expectError(try await api.raw(.get, "/v1/apps", key: key), 401, "UNAUTHORIZED")
                expectError(try await api.raw(.get, "/v1/apps/\(second.appId)/stats", key: key), 401, "UNAUTHORIZED")
            }
            // Reads answered 503 (Redis past the deadline on a busy machine) changed nothing and are sent again.
            expectError(try await retryingUnavailable { try await api.admin(.get, "/v1/apps/nosuchapp/stats") }, 404, "APP_NOT_FOUND")
            expectError(try await api.admin(.get, "/v1/apps/bad%20id/stats"), 400, "INVALID_USER_ID")
        }
    }

    @Test func statsCountDevicesOnlineUsersDeliveredEventsAndRateLimitRejectionsOfThatAppOnly() async throws {
        try await withStatusd(.live) { api in
            let config: JSONValue = ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 1, "windowSeconds": 60]]
            let app = try await api.createApp(config: config)
            let other = try await api.createApp(config: config)
            try await app.createUsers(["alice", "bob", "carol"])
            try await other.createUsers(["alice", "bob"])
            let stats: @Sendable (APIClient) async throws -> JSONValue = { target in
                try await retryingUnavailable { try await api.admin(.get, "/v1/apps/\(target.appId)/stats") }.body
            }
            let idle = try await stats(app)
            #expect(idle["onlineUsers"] == 0 && idle["node"]["connectedDevices"] == 0)
            #expect(idle["node"]["eventsDelivered"] == 0 && idle["node"]["rateLimited"] == 0)
            #expect(idle["node"]["nodeId"].string?.isEmpty == false && (idle["at"].int ?? 0) > 0)
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "a1")) { alice, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "a2")) { _, _ in
                    try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "b1")) { _, _ in
                        let connected = try await stats(app)
                        #expect(connected["node"]["connectedDevices"] == 3)
                        #expect(connected["onlineUsers"] == 2)
                        #expect(try await stats(other)["node"]["connectedDevices"] == 0)
                        let subscribed = try await alice.request("subscribeUserStatus", ["userIds": ["carol"]])
                        #expect(subscribed["ok"].bool == true)
                        // carol's change reaches alice's two devices: two more events written (the connects already
                        // told alice's devices about each other).
                        try await Task.sleep(for: .milliseconds(200))
                        let before = try #require(try await stats(app)["node"]["eventsDelivered"].int)
                        try await app.setStatus("carol", "lunch")
                        _ = try await alice.nextStatus(of: "carol")
                        try await Task.sleep(for: .milliseconds(200))
                        #expect(try await stats(app)["node"]["eventsDelivered"].int == before + 2)
                        // One rejection over WebSocket (the subscribe used alice's one call), one over HTTP for bob.
                        let refused = try await alice.request("subscribeUserStatus", ["userIds": ["bob"]])
                        #expect(refused["error"]["code"].string == "RATE_LIMITED")
                        #expect(try await app.query("bob", ["carol"]).status == 200)
                        expectError(try await app.query("bob", ["carol"]), 429, "RATE_LIMITED")
                        let limited = try await stats(app)
                        #expect(limited["node"]["rateLimited"] == 2)
                        #expect(try await stats(other)["node"]["rateLimited"] == 0)
                        #expect(try await stats(other)["node"]["eventsDelivered"] == 0)
                    }
                }
            }
            // Devices gone: the counts follow (the departures are filed asynchronously, within seconds on a busy machine).
            var after = try await stats(app)
            let deadline = ContinuousClock.now + .seconds(10)
            while after["node"]["connectedDevices"] != 0 || after["onlineUsers"] != 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                after = try await stats(app)
            }
            #expect(after["node"]["connectedDevices"] == 0 && after["onlineUsers"] == 0)
            #expect(after["node"]["rateLimited"] == 2)
        }
    }
}
