import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.2: `clearAfterSeconds` (1–604,800) with a custom status; the status object carries `customStatusExpiresAt`;
/// at that moment (within 1 s) the custom status is cleared as a notified change (webhook reason `expired`), on any node
/// and after a restart; another custom status without it, or a clearing, removes the expiry.
@Suite(.redis) struct CustomStatusExpiryTests {
    private func set(_ app: APIClient, _ userId: String, _ body: JSONValue) async throws -> APIResponse {
        try await app.call(.put, "/users/\(userId)/status", body)
    }

    /// A live node on a redis-server of the test's own whose housekeeping moves only when the test steps `clock`, and a
    /// storage layer of its own on that server: a second node, which the test drives by hand.
    private func withHeldNodeAndStorage(_ body: @Sendable (APIClient, StorageLayer, ManualNodeClock) async throws -> Void) async throws {
        try await withHeldNode { api, server, clock in
            let redis = RedisClient(configuration: server.configuration, logger: Logger(label: "expiry-held-node"))
            let storage = try StorageLayer(redis: redis, configuration: server.configuration, clock: SystemNodeClock())
            try await closing(redis) { try await body(api, storage, clock) }
        }
    }

    /// Steps the held node's clock up to the wall time (and `lead` ms past it), then 250 ms at a time until the user's
    /// custom status is cleared (5 s at most); returns the user's status then.
    private func stepUntilCleared(_ app: APIClient, _ userId: String, clock: ManualNodeClock, lead: Int64) async throws -> JSONValue {
        let caughtUp = Int64(Date().timeIntervalSince1970 * 1000) - clock.nowMs + lead
        try await clock.step(by: .milliseconds(max(caughtUp, 500)))
        let deadline = ContinuousClock.now + .seconds(5)
        var status = try await app.ownStatus(userId)
        while status.has("customStatus") {
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "not cleared") }
            try await clock.step(by: .milliseconds(250))
            status = try await app.ownStatus(userId)
        }
        return status
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
    /// runs ahead does not take the entry before it is due by Redis's clock (and were it taken early, the script would
    /// answer that the moment has not come, and the entry would go back at it).
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

/// SPEC §10.2 "within 1 s of that moment", whatever the order in which writes, sweeps and nodes reach Redis: the due
/// index (in the app's slot) and the status (in the user's) are separate round trips, so the index may hold another
/// time than the stored expiry; the stored one decides, and no entry goes while an expiry is stored.
extension CustomStatusExpiryTests {
    /// Two setSelfStatus of one user at the same moment, "short" (2 s) and "long" (an hour), from two devices of the
    /// user (two sockets: the node runs them at once), for many users: whichever was stored last, a "short" that stayed
    /// is cleared within a second of its moment.
    @Test func racingCustomStatusesOfOneUserNeverLeaveAnExpiryBehind() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            let users = (0..<60).map { "u\($0)" }
            try await app.createUsers(users)
            let port = try #require(api.client.port)
            try await withThrowingTaskGroup(of: Void.self) { group in
                var pairs: [(TestDevice, TestDevice)] = []
                for user in users {
                    let short = try await app.openDevice(port: port, userId: user, DeviceOptions(deviceId: "d1")) { group.addTask(operation: $0) }.0
                    let long = try await app.openDevice(port: port, userId: user, DeviceOptions(deviceId: "d2")) { group.addTask(operation: $0) }.0
                    pairs.append((short, long))
                }
                // Both frames of a pair written back to back, every pair before any reply is awaited.
                for (short, long) in pairs {
                    try await short.send(["id": "s", "op": "setSelfStatus", "customStatus": "short", "clearAfterSeconds": 2])
                    try await long.send(["id": "l", "op": "setSelfStatus", "customStatus": "long", "clearAfterSeconds": 3600])
                }
                var kept = 0
                var latest: Int64 = 0
                for (short, long) in pairs {
                    let first = try await short.next { $0["id"] == "s" }
                    let second = try await long.next { $0["id"] == "l" }
                    #expect(first["ok"] == true && second["ok"] == true)
                    latest = max(latest, first["result"]["customStatusExpiresAt"].int ?? 0)
                }
                for user in users where try await app.ownStatus(user)["customStatus"] == "short" { kept += 1 }
                // Past every "short" moment by a second: none is left.
                let wait = latest + 1000 - Int64(Date().timeIntervalSince1970 * 1000)
                if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) }
                var stuck: [String] = []
                for user in users {
                    if try await app.ownStatus(user)["customStatus"] == "short" { stuck.append(user) }
                }
                // Which of them were only late (a loaded machine) and which kept it for good (an expiry lost): told apart in
                // the failure's message.
                var never = stuck
                let bound = ContinuousClock.now + .seconds(5)
                while !never.isEmpty, ContinuousClock.now < bound {
                    try await Task.sleep(for: .milliseconds(250))
                    var left: [String] = []
                    for user in never where try await app.ownStatus(user)["customStatus"] == "short" { left.append(user) }
                    never = left
                }
                print("racing pairs: \(users.count) users, \(kept) left on \"short\", \(stuck.count) of them kept it past its moment")
                #expect(
                    stuck.isEmpty,
                    "\(stuck.count) of \(kept) users left on \"short\" kept it past its moment: \(stuck); still 5 s later: \(never)"
                )
                group.cancelAll()
            }
        }
    }

    /// A node that took an entry (leased it) and died before handling it: once the lease ran out, on Redis's clock,
    /// another node clears the custom status, though the entry's time is then the lease's. On a server of the test's own,
    /// with the live node's housekeeping held (its clock moves only when the test steps it), so that the dying node's
    /// take is the one that wins.
    @Test func anEntryLeasedByANodeThatDiedIsClearedByAnother() async throws {
        try await withHeldNodeAndStorage { api, storage, clock in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let set = expectOK(try await set(app, "alice", ["customStatus": "brb", "clearAfterSeconds": 1]))
            let expires = try #require(set["customStatusExpiresAt"].int)
            let wait = expires + 20 - Int64(Date().timeIntervalSince1970 * 1000)
            if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) }
            // The node that dies takes the entry once it is due, and stops.
            let keys = RedisKeys(appId: app.appId)
            let taken = try await storage.dueIndexes.take(
                DueIndexKeys(index: keys.expiries, leases: keys.expiryLeases),
                nowMs: .max,
                leaseMs: DueIndexSweep.leaseMs,
                limit: 10
            )
            #expect(taken.entries.map(\.userId) == ["alice"])
            #expect(try await app.ownStatus("alice")["customStatus"] == "brb")
            // The live node sweeps on: once the lease ran out the entry is back in the index, and cleared.
            try await Task.sleep(for: .milliseconds(DueIndexSweep.leaseMs))
            let cleared = try await stepUntilCleared(app, "alice", clock: clock, lead: 1000)
            #expect(cleared["version"].int == (set["version"].int ?? 0) + 1)
        }
    }

    /// A node handling an entry is told the stored moment has not come (a longer one was stored since the entry was
    /// written) and puts the entry back at it; a newer, earlier expiry written meanwhile is not pushed back to that
    /// later moment. On a server of the test's own, the live node's housekeeping held until the test steps its clock.
    @Test func anEntryPutBackNeverMovesANewerOneLater() async throws {
        try await withHeldNodeAndStorage { api, storage, clock in
            let redis = storage.redis
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let long = expectOK(try await set(app, "alice", ["customStatus": "long", "clearAfterSeconds": 3600]))
            let later = try #require(long["customStatusExpiresAt"].int)
            // An entry of an earlier time (an expiry replaced since) falls due: a node takes it, and hears that the
            // stored moment has not come.
            let keys = RedisKeys(appId: app.appId)
            let index = DueIndexKeys(index: keys.expiries, leases: keys.expiryLeases)
            _ = try await redis.send("ZADD", keys.expiries, String(Int64(Date().timeIntervalSince1970 * 1000) - 1), "alice")
            let taken = try await storage.dueIndexes.take(index, nowMs: .max, leaseMs: DueIndexSweep.leaseMs, limit: 10)
            #expect(taken.entries.map(\.userId) == ["alice"])
            guard case .later(let moment) = try await storage.statuses.expireCustomStatus(appId: app.appId, userId: "alice") else {
                Issue.record("the expiry was not reported later")
                return
            }
            #expect(moment == later)
            // Meanwhile a shorter one is stored; then the node puts the entry back at the moment it was told.
            let short = expectOK(try await set(app, "alice", ["customStatus": "short", "clearAfterSeconds": 1]))
            try await storage.dueIndexes.finish(index, entries: [("alice", moment)], leaseScore: taken.leaseScore)
            let expires = try #require(short["customStatusExpiresAt"].int)
            let wait = expires - Int64(Date().timeIntervalSince1970 * 1000)
            if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) }
            let cleared = try await stepUntilCleared(app, "alice", clock: clock, lead: 500)
            #expect(cleared["version"].int == (short["version"].int ?? 0) + 1)
        }
    }

    /// An entry whose time is not the stored expiry (a lease's, as an earlier version left it, or another write's):
    /// taken then, it is not dropped, and the custom status is cleared.
    @Test func anEntryAtAnotherTimeThanTheStoredExpiryIsNotDropped() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "expiry-drift-test"))
        try await closing(redis) {
            try await withStatusd(.live) { api in
                let app = try await api.createApp()
                try await app.createUsers(["alice"])
                let set = expectOK(try await set(app, "alice", ["customStatus": "brb", "clearAfterSeconds": 1]))
                let expires = try #require(set["customStatusExpiresAt"].int)
                _ = try await redis.send("ZADD", RedisKeys(appId: app.appId).expiries, "XX", String(expires + 1500), "alice")
                let status = try await waitUntil(app, "alice", timeout: .seconds(5)) { !$0.has("customStatus") }
                #expect(status["version"].int == (set["version"].int ?? 0) + 1)
            }
        }
    }

    /// SPEC §7: a write whose expiry entry could not be written fails, and stores nothing: no custom status is left
    /// with an expiry nothing would clear.
    @Test func aFailedExpiryEntryFailsTheWriteAndStoresNothing() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "expiry-error-test"))
        try await closing(redis) {
            try await withStatusd(.live) { api in
                let app = try await api.createApp()
                try await app.createUsers(["alice"])
                let keys = RedisKeys(appId: app.appId)
                // The app's index cannot take a ZADD (WRONGTYPE) while this runs.
                _ = try await redis.send("SET", keys.expiries, "not a sorted set")
                let refused = try await set(app, "alice", ["customStatus": "brb", "clearAfterSeconds": 1])
                _ = try await redis.send("DEL", keys.expiries)
                #expect(refused.status >= 500, "\(refused.status) \(refused.body)")
                let status = try await app.ownStatus("alice")
                #expect(!status.has("customStatus") && status["version"] == 0, "\(status)")
            }
        }
    }
}
