import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.2: `clearAfterSeconds` (1–604,800) with a custom status; the status object carries `customStatusExpiresAt`;
/// at that moment (within 1 s) the custom status is cleared as a notified change (webhook reason `expired`), on any node
/// and after a restart; another custom status without it, or a clearing, removes the expiry.
@Suite struct CustomStatusExpiryTests {
    private func set(_ app: APIClient, _ userId: String, _ body: JSONValue) async throws -> APIResponse {
        try await app.call(.put, "/users/\(userId)/status", body)
    }

    private func waitUntil(
        _ app: APIClient,
        _ userId: String,
        timeout: Duration = .seconds(4),
        _ condition: (JSONValue) -> Bool
    ) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        while true {
            let status = try await app.ownStatus(userId)
            if condition(status) { return status }
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "\(userId): \(status)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func clearAfterSecondsIsCheckedAndNeedsACustomStatus() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            for bad: JSONValue in [0, 604_801, -1, "60", nil] {
                expectError(try await set(app, "alice", ["customStatus": "x", "clearAfterSeconds": bad]), 400, "INVALID_REQUEST")
            }
            expectError(try await set(app, "alice", ["clearAfterSeconds": 60]), 400, "INVALID_REQUEST")
            expectError(try await set(app, "alice", ["customStatus": nil, "clearAfterSeconds": 60]), 400, "INVALID_REQUEST")
            expectError(try await set(app, "alice", ["customStatus": "", "clearAfterSeconds": 60]), 400, "INVALID_REQUEST")
            #expect(try await app.ownStatus("alice")["version"] == 0)
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let week = expectOK(try await set(app, "alice", ["customStatus": "away for a week", "clearAfterSeconds": 604_800]))
            let expires = try #require(week["customStatusExpiresAt"].int)
            #expect(abs(expires - before - 604_800_000) < 5000)
            #expect(try await app.ownStatus("alice")["customStatusExpiresAt"].int == expires)
        }
    }

    @Test func itClearsItselfWithinOneSecondAsANotifiedChange() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("bob", ["alice"]))
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-1")) { watcher, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-1")) { device, _ in
                    _ = try await watcher.nextStatus(of: "alice")
                    let reply = try await device.request("setSelfStatus", ["customStatus": "in a meeting", "clearAfterSeconds": 1])
                    let expires = try #require(reply["result"]["customStatusExpiresAt"].int)
                    let version = try #require(reply["result"]["version"].int)
                    let shown = try await watcher.nextStatus(of: "alice")
                    #expect(shown["customStatus"] == "in a meeting" && shown["customStatusExpiresAt"].int == expires)
                    let cleared = try await watcher.nextStatus(of: "alice", timeout: .seconds(4))
                    let at = Int64(Date().timeIntervalSince1970 * 1000)
                    #expect(!cleared.has("customStatus") && !cleared.has("customStatusExpiresAt"))
                    #expect(cleared["version"].int == version + 1)
                    #expect(at - expires < 1000, "cleared \(at - expires) ms after its moment")
                    #expect(at >= expires - 50)
                    let own = try await device.next { $0["event"] == "onUserStatusChanged" && $0["statuses"][0]["version"].int == version + 1 }
                    #expect(!own["statuses"][0].has("customStatus"))
                }
            }
        }
    }

    @Test func anotherCustomStatusOrAClearingRemovesTheExpiry() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            expectOK(try await set(app, "alice", ["customStatus": "brb", "clearAfterSeconds": 1]))
            let other = expectOK(try await set(app, "alice", ["customStatus": "staying"]))
            #expect(!other.has("customStatusExpiresAt"))
            expectOK(try await set(app, "bob", ["customStatus": "brb", "clearAfterSeconds": 1]))
            let clearedBob = expectOK(try await set(app, "bob", ["customStatus": nil]))
            // The same text again with a new expiry is a change too.
            expectOK(try await set(app, "bob", ["customStatus": "back", "clearAfterSeconds": 60]))
            let renewed = expectOK(try await set(app, "bob", ["customStatus": "back", "clearAfterSeconds": 1]))
            #expect(renewed["version"].int == (clearedBob["version"].int ?? 0) + 2)
            try await Task.sleep(for: .milliseconds(1800))
            let alice = try await app.ownStatus("alice")
            #expect(alice["customStatus"] == "staying" && alice["version"] == other["version"])
            let bob = try await waitUntil(app, "bob") { !$0.has("customStatus") }
            #expect(bob["version"].int == (renewed["version"].int ?? 0) + 1)
        }
    }

    @Test func theExpiryHoldsAcrossARestart() async throws {
        let appId = "expiry-\(UUID().uuidString.prefix(8))"
        let adminKey = "admin-" + UUID().uuidString
        let key = try await withStatusd(.live, adminKey: adminKey) { api in
            let app = try await api.createApp(appId: appId)
            try await app.createUsers(["alice"])
            expectOK(try await set(app, "alice", ["customStatus": "until the restart", "clearAfterSeconds": 1]))
            return app.apiKey
        }
        // Down past the moment; the next node to run clears it.
        try await Task.sleep(for: .milliseconds(1200))
        try await withStatusd(.live, adminKey: adminKey) { api in
            let app = APIClient(client: api.client, adminKey: adminKey, appId: appId, apiKey: key)
            let status = try await waitUntil(app, "alice", timeout: .seconds(2)) { !$0.has("customStatus") }
            #expect(status["version"] == 2)
        }
    }

    @Test func theWebhookHearsOfItWithReasonExpired() async throws {
        let receiver = WebhookReceiver(planned: [])
        try await receiver.run { url in
            try await withStatusd(.live) { api in
                let app = try await api.createApp(config: WebhookTests.webhookConfig(url))
                try await app.createUsers(["alice"])
                expectOK(try await set(app, "alice", ["customStatus": "lunch", "clearAfterSeconds": 1]))
                let requests = try await receiver.waitUntil { $0.contains { $0.json["reason"] == "expired" } }
                let expired = try #require(requests.first { $0.json["reason"] == "expired" }).json
                #expect(expired["action"] == "customStatusChange")
                #expect(expired["customStatus"] == .null && expired.has("customStatus"))
                #expect(expired["userId"] == "alice")
            }
        }
    }
}

extension CustomStatusExpiryTests {
    /// SPEC §10.5: the expiry of an invisible user's custom status is a change of their own view only.
    @Test func anInvisibleUsersExpiryIsNotAPublicChange() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.login("alice", "phone"))
            expectOK(try await app.call(.put, "/users/alice/status", ["availability": "invisible"]))
            let set = expectOK(
                try await app.call(.put, "/users/alice/status", ["customStatus": "hidden plans", "clearAfterSeconds": 1])
            )
            let seen = try await app.query("bob", ["alice"]).body["statuses"][0]
            let deadline = ContinuousClock.now + .seconds(4)
            while try await app.ownStatus("alice").has("customStatus") {
                guard ContinuousClock.now < deadline else { throw TestAppError(message: "not cleared") }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await app.ownStatus("alice")["version"].int == (set["version"].int ?? 0) + 1)
            #expect(try await app.query("bob", ["alice"]).body["statuses"][0] == seen)
        }
    }
}

extension CustomStatusExpiryTests {
    /// SPEC §10.2 "at that moment": the moment is read on the Redis clock, shared by every node. A node whose own clock
    /// runs ahead takes the entry early, is told the moment has not come, and puts the entry back at it.
    @Test func aNodeWhoseClockRunsAheadDoesNotClearEarly() async throws {
        let clock = ManualNodeClock()
        try await withStatusd(.live, configure: clock.install) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let set = expectOK(try await set(app, "alice", ["customStatus": "back at three", "clearAfterSeconds": 3]))
            let expires = try #require(set["customStatusExpiresAt"].int)
            // Ten seconds ahead of Redis: every sweep meanwhile finds the entry due by the node's clock.
            try await clock.step(by: .seconds(10))
            let early = try await app.ownStatus("alice")
            if Int64(Date().timeIntervalSince1970 * 1000) < expires {
                #expect(early["customStatus"] == "back at three", "cleared before its moment")
            }
            // Once the moment has come on the Redis clock, the entry put back at it is cleared by the next sweep.
            let deadline = ContinuousClock.now + .seconds(8)
            while try await app.ownStatus("alice").has("customStatus") {
                guard ContinuousClock.now < deadline else { throw TestAppError(message: "not cleared") }
                try await clock.step(by: .milliseconds(250))
            }
            #expect(Int64(Date().timeIntervalSince1970 * 1000) >= expires)
            #expect(try await app.ownStatus("alice")["version"].int == (set["version"].int ?? 0) + 1)
        }
    }
}
