import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §6: who receives `onUserStatusChanged`, over real WebSockets.
@Suite(.redis) struct FanoutTests {
    /// What a watcher (device `w1`, of `presence`) was told about alice while she connected, set a custom status and
    /// dropped (versions 1, 2 and 3). These tests count what the routing rules deliver; a bus gap on a loaded machine
    /// (the node's shard connection missing a ping and reconnecting) has the node deliver only the latest status of
    /// what it missed, by design (docs/delivery.md). A run during which the node counted a gap
    /// (`statusd_bus_gaps_total`) is run again, twice at most.
    private func eventsSeen(
        config: JSONValue,
        presence: String? = nil,
        setup: @Sendable (APIClient) async throws -> Void = { _ in }
    ) async throws -> [JSONValue] {
        var attempt = 1
        while true {
            let (events, gapped) = try await eventsSeenOnce(config: config, presence: presence, setup: setup)
            if !gapped || attempt == 3 { return events }
            attempt += 1
        }
    }

    private func eventsSeenOnce(
        config: JSONValue,
        presence: String?,
        setup: @Sendable (APIClient) async throws -> Void
    ) async throws -> (events: [JSONValue], gapped: Bool) {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: config)
            try await app.createUsers(["alice", "watcher"])
            _ = try await app.call(.put, "/users/alice", ["role": "moderator"])
            try await setup(app)
            let port = api.client.port!
            let gapsBefore = try await busGaps(api)
            let events = try await app.withDevice(port: port, userId: "watcher", DeviceOptions(deviceId: "w1", presence: presence)) { watcher, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "a1")) { alice, _ in
                    _ = try await alice.request("setSelfStatus", ["customStatus": "hello"])
                }
                // Alice's last change is going offline: wait for it when it comes, then take everything about her.
                _ = try? await watcher.waitFor(timeout: .seconds(2)) {
                    $0["event"].string == "onUserStatusChanged" && $0["statuses"][0]["statusType"].string == "offline"
                }
                return try await watcher.statusEvents(of: "alice", settle: .milliseconds(200))
            }
            return (events, try await busGaps(api) != gapsBefore)
        }
    }

    /// The node's count of bus gaps.
    private func busGaps(_ api: APIClient) async throws -> Int {
        NodeMetricsTests.sample(try await api.metricsText(), "statusd_bus_gaps_total")
    }

    private let premium: JSONValue = ["plan": "premium", "statusQuery": true]

    @Test func subscribersHearEveryChangeOnce() async throws {
        let events = try await eventsSeen(config: premium) { app in
            _ = try await app.call(.post, "/users/watcher/subscriptions", ["userIds": ["alice"]])
        }
        // online, custom status, offline (with the custom status cleared): three changes, three events.
        #expect(events.map { $0["statusType"].string } == ["online", "online", "offline"])
        #expect(events.map { $0["version"].int } == [1, 2, 3])
        #expect(events.count == 3 && events[1]["customStatus"].string == "hello")
    }

    @Test func subscribersHearNothingOnBasicPlanOrWithTheSwitchOff() async throws {
        for config: JSONValue in [["plan": "basic"], ["plan": "premium", "statusQuery": false]] {
            let events = try await eventsSeen(config: config) { app in
                // The subscription is stored while the feature was on, then the feature goes off.
                _ = try await app.admin(.patch, "/v1/apps/\(app.appId)/config", ["plan": "premium", "statusQuery": true])
                _ = try await app.call(.post, "/users/watcher/subscriptions", ["userIds": ["alice"]])
                _ = try await app.admin(.patch, "/v1/apps/\(app.appId)/config", config)
            }
            #expect(events.isEmpty)
        }
    }

    @Test func friendsHearChangesOnlyWithFriendStatusNotify() async throws {
        let befriend: @Sendable (APIClient) async throws -> Void = { app in
            _ = try await app.call(.put, "/users/alice/friends", ["userIds": ["watcher"]])
        }
        let on = try await eventsSeen(config: ["plan": "premium", "friendStatusNotify": true], setup: befriend)
        #expect(on.count == 3)
        let off = try await eventsSeen(config: ["plan": "premium", "statusQuery": true], setup: befriend)
        #expect(off.isEmpty)
        let basic = try await eventsSeen(config: ["plan": "basic", "friendStatusNotify": true], setup: befriend)
        #expect(basic.isEmpty)
    }

    @Test func presenceScopesAllFriendsAndRoles() async throws {
        #expect(try await eventsSeen(config: premium, presence: "all").count == 3)
        #expect(try await eventsSeen(config: premium, presence: "roles:admin,moderator").count == 3)
        #expect(try await eventsSeen(config: premium, presence: "roles:admin").isEmpty)
        #expect(try await eventsSeen(config: premium, presence: "friends").isEmpty)
        let friends = try await eventsSeen(config: premium, presence: "friends") { app in
            _ = try await app.call(.put, "/users/watcher/friends", ["userIds": ["alice"]])
        }
        #expect(friends.count == 3)
        // Scopes need premium + statusQuery.
        #expect(try await eventsSeen(config: ["plan": "premium"], presence: "all").isEmpty)
    }

    /// A deleted user's profile goes before their devices: the departure that follows still reaches a `roles:` scope
    /// that heard them by the role they had (SPEC §6, §10.3), or it would show them `online` for ever.
    @Test func aRolesScopeHearsADeletedUserLeave() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premium)
            try await app.createUsers(["alice", "watcher"])
            _ = try await app.call(.put, "/users/alice", ["role": "moderator"])
            let port = api.client.port!
            let options = DeviceOptions(deviceId: "w1", presence: "roles:moderator")
            try await app.withDevice(port: port, userId: "watcher", options) { watcher, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "a1")) { _, _ in
                    _ = try await watcher.waitFor(timeout: .seconds(2)) {
                        $0["event"].string == "onUserStatusChanged" && $0["statuses"][0]["statusType"].string == "online"
                    }
                    #expect(try await app.call(.delete, "/users/alice").status == 204)
                    let left = try? await watcher.waitFor(timeout: .seconds(2)) {
                        $0["event"].string == "onUserStatusChanged" && $0["statuses"][0]["userId"].string == "alice"
                            && $0["statuses"][0]["statusType"].string == "unlogined"
                    }
                    #expect(left != nil, "the watcher was not told that alice left")
                }
            }
        }
    }

    @Test func blocksStopEventsInBothDirections() async throws {
        for (blocker, blocked) in [("alice", "watcher"), ("watcher", "alice")] {
            let events = try await eventsSeen(config: premium, presence: "all") { app in
                _ = try await app.call(.post, "/users/watcher/subscriptions", ["userIds": ["alice"]])
                _ = try await app.call(.put, "/users/\(blocker)/blocks", ["userIds": [.string(blocked)]])
            }
            #expect(events.isEmpty, "blocker \(blocker)")
        }
    }

    @Test func eachDeviceHearsAChangeOnceWhenSeveralRulesMatch() async throws {
        let events = try await eventsSeen(config: ["plan": "premium", "statusQuery": true, "friendStatusNotify": true], presence: "all") { app in
            _ = try await app.call(.post, "/users/watcher/subscriptions", ["userIds": ["alice"]])
            _ = try await app.call(.put, "/users/watcher/friends", ["userIds": ["alice"]])
        }
        #expect(events.map { $0["version"].int } == [1, 2, 3])
    }

    @Test func ownDevicesHearChangesOnlyWithMultiDeviceSync() async throws {
        for sync in [true, false] {
            try await withStatusd(.live) { api in
                let app = try await api.createApp(config: ["multiDeviceSync": .bool(sync)])
                try await app.createUsers(["alice"])
                let port = api.client.port!
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { phone, _ in
                    try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "laptop")) { laptop, _ in
                        _ = try await laptop.request("setSelfStatus", ["customStatus": "from laptop"])
                        let fromLaptop: (JSONValue) -> Bool = { $0["statuses"][0]["customStatus"].string == "from laptop" }
                        if sync {
                            try await phone.waitFor(where: fromLaptop)
                            try await laptop.waitFor(where: fromLaptop)
                        }
                        let phoneEvents = try await phone.statusEvents(of: "alice").filter { $0["customStatus"].string == "from laptop" }
                        let laptopEvents = try await laptop.statusEvents(of: "alice", settle: .zero).filter {
                            $0["customStatus"].string == "from laptop"
                        }
                        #expect(phoneEvents.count == (sync ? 1 : 0))
                        #expect(laptopEvents.count == (sync ? 1 : 0))
                    }
                }
            }
        }
    }

    @Test func subscriptionChangesReachTheIndexAtOnce() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "watcher"])
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "watcher", DeviceOptions(deviceId: "w1")) { watcher, _ in
                // Subscribed through the server API while the device is connected.
                _ = try await app.call(.post, "/users/watcher/subscriptions", ["userIds": ["alice"]])
                try await Task.sleep(for: .milliseconds(200))
                _ = try await app.call(.put, "/users/alice/status", ["customStatus": "one"])
                #expect(try await watcher.nextStatus(of: "alice")["customStatus"].string == "one")
                _ = try await app.call(.delete, "/users/watcher/subscriptions", .object([:]))
                try await Task.sleep(for: .milliseconds(200))
                _ = try await app.call(.put, "/users/alice/status", ["customStatus": "two"])
                #expect(try await watcher.statusEvents(of: "alice").isEmpty)
            }
        }
    }
}
