import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.5 with `offlineGraceSeconds` G > 0: becoming invisible is shown to others exactly as the last device
/// dropping. They see the user `online` (no device, custom status and availability as they were) until G has passed,
/// then `offline` with `lastActiveAt` the moment the user became invisible; and nothing at all if the user leaves
/// invisibility within G. The node's housekeeping runs on a clock the test steps, so the end comes when the test says,
/// not when a busy machine gets to it (or another test's node, which is why each test has a redis-server of its own).
@Suite(.redis) struct InvisibilityGraceTests {
    static func config(grace: Int) -> JSONValue {
        ["plan": "premium", "statusQuery": true, "offlineGraceSeconds": .int(Int64(grace)), "rateLimit": ["calls": 1000, "windowSeconds": 1]]
    }

    /// Runs `body` with a live node on a held clock, alice online on device `d1` with custom status "hello" and bob
    /// (subscribed to her) on his socket, having heard her change; hands it the app, the clock, alice's device, bob's
    /// and the public view bob has of her.
    private func withWatchedUser(
        grace: Int,
        _ body: @Sendable (APIClient, ManualNodeClock, TestDevice, TestDevice, JSONValue) async throws -> Void
    ) async throws {
        // A redis-server of the test's own: no other test's node sweeps its graces.
        try await withHeldNode { api, _, clock in
            let app = try await api.createApp(config: Self.config(grace: grace))
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("bob", ["alice"]))
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-1")) { bob, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "d1")) { alice, _ in
                    _ = try await bob.nextStatus(of: "alice")
                    #expect(try await alice.request("setSelfStatus", ["customStatus": "hello"])["ok"] == true)
                    let seen = try await bob.nextStatus(of: "alice")
                    try await body(app, clock, alice, bob, seen)
                }
            }
        }
    }

    /// `offline` is the public view of a user who became invisible between `before` and `after`, once the grace of it
    /// ended: offline, nothing else shown, one public change past `seen`, last active at that moment.
    private static func expectOfflineSinceHiding(_ offline: JSONValue, seen: JSONValue, between before: Int64, and after: Int64) throws {
        #expect(offline["statusType"] == "offline" && !offline.has("customStatus") && !offline.has("availability"))
        #expect(offline["version"].int == (seen["version"].int ?? 0) + 1)
        let lastActive = try #require(offline["lastActiveAt"].int)
        #expect(lastActive >= before - 5 && lastActive <= after + 5, "lastActiveAt \(lastActive) not in [\(before), \(after)]")
    }

    /// Sets alice's availability over `transport`.
    private func setAvailability(
        _ availability: String,
        over transport: InvisibilityTests.Transport,
        app: APIClient,
        device: TestDevice
    ) async throws {
        switch transport {
        case .http:
            expectOK(try await app.call(.put, "/users/alice/status", ["availability": .string(availability)]))
        case .webSocket:
            let reply = try await device.request("setSelfStatus", ["availability": .string(availability)])
            #expect(reply["ok"] == true, "\(reply)")
        }
    }

    @Test(arguments: InvisibilityTests.Transport.allCases)
    func becomingInvisibleShowsOfflineOnlyWhenTheGraceEndsAtThatMoment(transport: InvisibilityTests.Transport) async throws {
        try await withWatchedUser(grace: 1) { app, clock, alice, bob, seen in
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            try await setAvailability("invisible", over: transport, app: app, device: alice)
            let after = Int64(Date().timeIntervalSince1970 * 1000)
            // As during a grace: online, no device, custom status and availability kept, nothing told.
            #expect(try await bob.statusEvents(of: "alice", settle: .milliseconds(300)).isEmpty)
            _ = try await alice.statusEvents(of: "alice", settle: .zero)
            let during = try await app.query("bob", ["alice"]).body["statuses"][0]
            #expect(during["statusType"] == "online" && during["customStatus"] == "hello" && during["availability"] == "available")
            #expect(during["onlineDevices"] == [] && during["version"] == seen["version"])
            let socket = try await bob.request("getUserStatus", ["userIds": ["alice"]])["result"]["statuses"][0]
            #expect(socket == during)
            // The grace has run out on Redis's clock; the node has not swept yet: still online.
            try await Task.sleep(for: .milliseconds(1200))
            #expect(try await bob.statusEvents(of: "alice", settle: .milliseconds(100)).isEmpty)
            // Its housekeeping ends the grace: offline since the moment she became invisible.
            try await clock.step(by: .seconds(2))
            let offline = try await bob.nextStatus(of: "alice")
            try Self.expectOfflineSinceHiding(offline, seen: seen, between: before, and: after)
            #expect(try await app.query("bob", ["alice"]).body["statuses"][0] == offline)
            #expect(try await bob.statusEvents(of: "alice", settle: .milliseconds(300)).isEmpty)
            // Her own devices heard nothing of it: her own view did not change.
            #expect(try await alice.statusEvents(of: "alice", settle: .zero).isEmpty)
            #expect(try await app.ownStatus("alice")["statusType"] == "online")
        }
    }

    @Test(arguments: InvisibilityTests.Transport.allCases)
    func leavingInvisibilityWithinTheGraceShowsOthersNothing(transport: InvisibilityTests.Transport) async throws {
        try await withWatchedUser(grace: 30) { app, clock, alice, bob, seen in
            try await setAvailability("invisible", over: transport, app: app, device: alice)
            try await setAvailability("available", over: transport, app: app, device: alice)
            // Past the grace on the node's clock: the entry is swept and ends nothing.
            try await clock.step(by: .seconds(31))
            #expect(try await bob.statusEvents(of: "alice", settle: .milliseconds(400)).isEmpty)
            let now = try await app.query("bob", ["alice"]).body["statuses"][0]
            #expect(now["statusType"] == "online" && now["customStatus"] == "hello" && now["version"] == seen["version"])
            // The user's own version moved twice; the public one never did.
            #expect(try await app.ownStatus("alice")["version"].int == (seen["version"].int ?? 0) + 2)
        }
    }

    /// A custom status set while invisible within the grace is not seen either: others keep what they saw.
    @Test func whatTheUserDoesWhileInvisibleWithinTheGraceIsNotSeen() async throws {
        try await withWatchedUser(grace: 30) { app, _, alice, bob, seen in
            try await setAvailability("invisible", over: .webSocket, app: app, device: alice)
            #expect(try await alice.request("setSelfStatus", ["customStatus": "secret"])["ok"] == true)
            #expect(try await bob.statusEvents(of: "alice", settle: .milliseconds(400)).isEmpty)
            let now = try await app.query("bob", ["alice"]).body["statuses"][0]
            #expect(now["statusType"] == "online" && now["customStatus"] == "hello" && now["availability"] == "available")
            #expect(now["version"] == seen["version"])
        }
    }

    /// A custom status that expires while others still see the user `online` after she became invisible goes from
    /// what they see at its moment, as it would for a user whose last device dropped: one public change (online, no
    /// custom status), then `offline` when the grace ends. The expiry (1 s) and the grace (4 s) run on Redis's clock.
    @Test func aCustomStatusExpiringWithinTheGraceGoesFromWhatOthersSee() async throws {
        try await withWatchedUser(grace: 4) { app, clock, alice, bob, _ in
            let set = try await alice.request("setSelfStatus", ["customStatus": "brb", "clearAfterSeconds": 1])
            #expect(set["ok"] == true, "\(set)")
            let seen = try await bob.nextStatus(of: "alice")
            #expect(seen["customStatus"] == "brb" && seen.has("customStatusExpiresAt"))
            try await setAvailability("invisible", over: .webSocket, app: app, device: alice)
            #expect(try await bob.statusEvents(of: "alice", settle: .milliseconds(300)).isEmpty)
            // Past the expiry on Redis's clock; the node's sweep, its clock stepped past the wall time, clears it.
            try await Task.sleep(for: .milliseconds(1100))
            try await clock.step(by: .milliseconds(Int64(Date().timeIntervalSince1970 * 1000) - clock.nowMs + 500))
            let cleared = try await bob.nextStatus(of: "alice")
            #expect(cleared["statusType"] == "online" && !cleared.has("customStatus") && !cleared.has("customStatusExpiresAt"))
            #expect(cleared["availability"] == "available" && cleared["onlineDevices"] == [])
            #expect(cleared["version"].int == (seen["version"].int ?? 0) + 1)
            #expect(try await app.query("bob", ["alice"]).body["statuses"][0] == cleared)
            // The grace ends: offline, one more public change.
            try await Task.sleep(for: .milliseconds(3200))
            try await clock.step(by: .seconds(5))
            let offline = try await bob.nextStatus(of: "alice")
            #expect(offline["statusType"] == "offline" && offline["version"].int == (seen["version"].int ?? 0) + 2)
        }
    }

    /// A kick of every device ends the grace of becoming invisible at once, as it ends a grace (SPEC §10.3): others see
    /// her `offline` now, since the moment she became invisible, not G later.
    @Test func aKickEndsTheGraceOfBecomingInvisibleAtOnce() async throws {
        try await withWatchedUser(grace: 30) { app, _, alice, bob, seen in
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            try await setAvailability("invisible", over: .webSocket, app: app, device: alice)
            let after = Int64(Date().timeIntervalSince1970 * 1000)
            #expect(try await bob.statusEvents(of: "alice", settle: .milliseconds(300)).isEmpty)
            expectOK(try await app.call(.post, "/users/alice/kick", [:]))
            let offline = try await bob.nextStatus(of: "alice")
            try Self.expectOfflineSinceHiding(offline, seen: seen, between: before, and: after)
            #expect(try await app.query("bob", ["alice"]).body["statuses"][0] == offline)
            #expect(try await app.ownStatus("alice")["statusType"] == "unlogined")
        }
    }
}
