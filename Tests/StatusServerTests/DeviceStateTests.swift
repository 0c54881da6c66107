import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.4: a device reports `active`, `idle` or `background` (`setDeviceState` on the socket, `state` with a backend
/// login or heartbeat); `onlineDevices` entries carry it; a change of state that leaves the shown availability as it was
/// is an `onlineDevices`-only event (own devices, same version). SPEC §10.1 automatic away: while the user chose
/// `available` and every connected device is idle or in the background, everyone who sees the user online sees `away`
/// (a change: version +1); a device reporting `active`, or a new device connecting, makes it `available` again.
@Suite(.redis) struct DeviceStateTests {
    @Test func setDeviceStateIsCheckedAndShownInOnlineDevices() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { device, welcome in
                #expect(welcome["status"]["onlineDevices"] == [["deviceId": "phone", "platform": "web", "state": "active"]])
                for bad: [String: JSONValue] in [[:], ["state": "asleep"], ["state": nil], ["state": 1], ["state": "idle", "extra": 1]] {
                    let reply = try await device.request("setDeviceState", bad)
                    #expect(reply["error"]["code"] == "INVALID_REQUEST", "\(bad): \(reply)")
                }
                let reply = try await device.request("setDeviceState", ["state": "background"])
                #expect(reply["result"]["onlineDevices"] == [["deviceId": "phone", "platform": "web", "state": "background"]])
                let detail = try await app.call(.post, "/status/query", ["userIds": ["alice"], "detail": true])
                #expect(detail.body["statuses"][0]["onlineDevices"] == [["deviceId": "phone", "platform": "web", "state": "background"]])
            }
        }
    }

    /// bob watches alice, whose phone is connected; `body` runs once bob heard her come online.
    private func watchingAlicesPhone(_ body: @escaping @Sendable (APIClient, Int, TestDevice, TestDevice) async throws -> Void) async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("bob", ["alice"]))
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-1")) { watcher, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { phone, _ in
                    _ = try await watcher.nextStatus(of: "alice")
                    try await body(app, port, watcher, phone)
                }
            }
        }
    }

    @Test func allDevicesIdleIsAutomaticAwayForEveryoneAndActiveEndsIt() async throws {
        try await watchingAlicesPhone { app, port, watcher, phone in
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "desk")) { desk, welcome in
                let version = try #require(welcome["status"]["version"].int)
                // One device idle, the other active: no change for anyone else.
                let first = try await phone.request("setDeviceState", ["state": "idle"])
                #expect(first["result"]["version"].int == version && first["result"]["availability"] == "available")
                let own = try await desk.next {
                    $0["event"] == "onUserStatusChanged" && $0["statuses"][0]["onlineDevices"].array.contains { $0["state"] == "idle" }
                }
                #expect(own["statuses"][0]["version"].int == version)
                #expect(try await watcher.statusEvents(of: "alice").isEmpty)
                // Both idle: away, as a change.
                let second = try await desk.request("setDeviceState", ["state": "background"])
                #expect(second["result"]["version"].int == version + 1 && second["result"]["availability"] == "away")
                let away = try await watcher.nextStatus(of: "alice")
                #expect(away["availability"] == "away" && away["statusType"] == "online")
                let seen = try await app.query("bob", ["alice"]).body["statuses"][0]
                #expect(seen["availability"] == "away")
                // Back at one of them: available again.
                let back = try await phone.request("setDeviceState", ["state": "active"])
                #expect(back["result"]["version"].int == version + 2 && back["result"]["availability"] == "available")
                #expect(try await watcher.nextStatus(of: "alice")["availability"] == "available")
            }
        }
    }

    @Test func aNewDeviceEndsAutomaticAwayAndAChosenAvailabilityIsNotOverridden() async throws {
        try await watchingAlicesPhone { app, port, watcher, phone in
            _ = try await phone.request("setDeviceState", ["state": "idle"])
            #expect(try await watcher.nextStatus(of: "alice")["availability"] == "away")
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "desk")) { _, welcome in
                #expect(welcome["status"]["availability"] == "available")
                let shown = try await watcher.nextStatus(of: "alice")
                #expect(shown["availability"] == "available")
            }
            // The desk left: the phone alone is idle again, so away again.
            #expect(try await watcher.nextStatus(of: "alice")["availability"] == "away")
            // busy is the user's choice: idle devices do not turn it into away, nor is a state change heard.
            _ = try await phone.request("setSelfStatus", ["availability": "busy"])
            #expect(try await watcher.nextStatus(of: "alice")["availability"] == "busy")
            _ = try await phone.request("setDeviceState", ["state": "active"])
            _ = try await phone.request("setDeviceState", ["state": "background"])
            #expect(try await watcher.statusEvents(of: "alice").isEmpty)
            #expect(try await app.query("bob", ["alice"]).body["statuses"][0]["availability"] == "busy")
        }
    }

    @Test func anInvisibleUsersStatesAreNoPublicChange() async throws {
        try await watchingAlicesPhone { app, _, watcher, phone in
            _ = try await phone.request("setSelfStatus", ["availability": "invisible"])
            let hidden = try await watcher.nextStatus(of: "alice")
            _ = try await phone.request("setDeviceState", ["state": "idle"])
            _ = try await phone.request("setDeviceState", ["state": "active"])
            #expect(try await watcher.statusEvents(of: "alice").isEmpty)
            #expect(try await app.query("bob", ["alice"]).body["statuses"][0] == hidden)
        }
    }

    @Test func backendDevicesPassTheirStateWithLoginAndHeartbeat() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            for bad: JSONValue in ["asleep", nil, 1, "IDLE"] {
                expectError(try await app.call(.post, "/users/alice/devices/tv/login", ["platform": "web", "state": bad]), 400, "INVALID_REQUEST")
            }
            #expect(try await app.ownStatus("alice")["statusType"] == "unlogined")
            let login = expectOK(try await app.call(.post, "/users/alice/devices/tv/login", ["platform": "web", "state": "background"]))
            #expect(login["onlineDevices"] == [["deviceId": "tv", "platform": "web", "state": "background"]])
            #expect(login["availability"] == "away")
            let version = try #require(login["version"].int)
            for bad: JSONValue in ["sleepy", nil, true] {
                expectError(try await app.call(.post, "/users/alice/devices/tv/heartbeat", ["state": bad]), 400, "INVALID_REQUEST")
            }
            expectError(try await app.call(.post, "/users/alice/devices/tv/heartbeat", ["mood": "idle"]), 400, "INVALID_REQUEST")
            let same = expectOK(try await app.call(.post, "/users/alice/devices/tv/heartbeat"))
            #expect(same["version"].int == version && same["onlineDevices"][0]["state"] == "background")
            let active = expectOK(try await app.call(.post, "/users/alice/devices/tv/heartbeat", ["state": "active"]))
            #expect(active["version"].int == version + 1 && active["availability"] == "available")
            #expect(active["onlineDevices"] == [["deviceId": "tv", "platform": "web", "state": "active"]])
        }
    }

    @Test func automaticAwayIsNotAWebhookEvent() async throws {
        let receiver = WebhookReceiver(planned: [])
        try await receiver.run { url in
            try await withStatusd(.live) { api in
                let app = try await api.createApp(config: WebhookTests.webhookConfig(url))
                try await app.createUsers(["alice"])
                expectOK(try await app.call(.post, "/users/alice/devices/tv/login", ["platform": "web"]))
                expectOK(try await app.call(.post, "/users/alice/devices/tv/heartbeat", ["state": "idle"]))
                expectOK(try await app.call(.put, "/users/alice/status", ["availability": "dnd"]))
                let requests = try await receiver.waitUntil { $0.contains { $0.json["action"] == "availabilityChange" } }
                let changes = requests.filter { $0.json["action"] == "availabilityChange" }.map { $0.json["availability"] }
                #expect(changes == ["dnd"])
            }
        }
    }
}
