import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §2 status transitions driven by real WebSocket devices.
@Suite(.redis) struct PresenceLifecycleTests {
    @Test func firstDeviceOnlineSecondChangesDevicesOnlyLastDropOffline() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            let port = api.client.port!
            _ = try await app.call(.post, "/users/bob/subscriptions", ["userIds": ["alice"]])
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "b1")) { bob, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone", platform: "ios")) { phone, welcome in
                    #expect(welcome["status"]["version"].int == 1)
                    let online = try await bob.nextStatus(of: "alice")
                    #expect(online["statusType"].string == "online")
                    #expect(online["version"].int == 1)
                    _ = try await phone.request("setSelfStatus", ["customStatus": "busy"])
                    #expect(try await bob.nextStatus(of: "alice")["customStatus"].string == "busy")
                    // The phone heard its own changes too (multi-device sync): online, then busy.
                    let own = try await phone.statusEvents(of: "alice", settle: .milliseconds(200))
                    #expect(own.map { $0["version"].int } == [1, 2])
                    try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "laptop", platform: "macos")) { _, second in
                        #expect(second["status"]["onlineDevices"].array.count == 2)
                        // The phone (own device) hears about the new device list, with the current version.
                        let devices = try await phone.nextStatus(of: "alice")
                        #expect(devices["version"].int == 2)
                        #expect(devices["onlineDevices"].array.count == 2)
                    }
                    // The laptop left: own devices told, the subscriber not.
                    let afterLaptop = try await phone.nextStatus(of: "alice")
                    #expect(afterLaptop["onlineDevices"].array.count == 1)
                    #expect(afterLaptop["statusType"].string == "online")
                    #expect(try await bob.statusEvents(of: "alice").isEmpty)
                }
                // The phone closed without logout: offline, custom status cleared, one change, one event.
                let offline = try await bob.nextStatus(of: "alice")
                #expect(offline["statusType"].string == "offline")
                #expect(!offline.has("customStatus"))
                #expect(offline["version"].int == 3)
                #expect(offline["lastActiveAt"].int != nil)
                #expect(try await bob.statusEvents(of: "alice").isEmpty)
            }
        }
    }

    @Test func logoutLeavesUnloginedAndClosesTheSocket() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "d1")) { device, _ in
                _ = try await device.request("setSelfStatus", ["customStatus": "x"])
                let reply = try await device.request("logout")
                #expect(reply["ok"].bool == true)
                #expect(reply["result"]["statusType"].string == "unlogined")
                #expect(!reply["result"].has("customStatus"))
                try await device.waitClosed()
            }
            let status = try await app.call(.post, "/status/query", ["userIds": ["alice"]])
            #expect(status.body["statuses"][0]["statusType"].string == "unlogined")
            #expect(status.body["statuses"][0]["version"].int == 3)
        }
    }

    @Test func kickClosesWithAKickedEventAndReplacingADeviceKicksTheOldConnection() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "d1")) { first, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "d1")) { second, welcome in
                    #expect(welcome["status"]["statusType"].string == "online")
                    let kicked = try await first.next { $0["event"].string == "kicked" }
                    #expect(kicked["reason"].string == "replaced")
                    try await first.waitClosed()
                    // The replacement keeps the user online.
                    try await Task.sleep(for: .milliseconds(200))
                    let status = try await app.call(.post, "/status/query", ["userIds": ["alice"], "detail": true])
                    #expect(status.body["statuses"][0]["statusType"].string == "online")
                    #expect(status.body["statuses"][0]["onlineDevices"].array.count == 1)
                    let kick = try await app.call(.post, "/users/alice/kick", ["deviceId": "d1"])
                    #expect(kick.body["kicked"].strings == ["d1"])
                    let event = try await second.next { $0["event"].string == "kicked" }
                    #expect(event["reason"].string == "kicked")
                    try await second.waitClosed()
                }
            }
            let status = try await app.call(.post, "/status/query", ["userIds": ["alice"]])
            #expect(status.body["statuses"][0]["statusType"].string == "unlogined")
        }
    }

    /// The timeout is the node's own time (the housekeeping's ticks, the session's last sign of life): the test moves
    /// the node's clock past it instead of waiting for it.
    @Test func aSilentSocketIsGoneAfterTheHeartbeatTimeout() async throws {
        let clock = ManualNodeClock()
        try await withStatusd(.live, configure: clock.install) { api in
            let app = try await api.createApp(config: ["heartbeatTimeoutSeconds": 5])
            try await app.createUsers(["alice"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "quiet")) { device, _ in
                // Just short of the timeout the socket stays; past it, a tick ends the session.
                try await clock.step(by: .milliseconds(4500))
                #expect(!device.isClosed)
                try await clock.step(by: .seconds(3)) { device.isClosed }
                try await device.waitClosed(timeout: .seconds(5))
                // Going away (1001): the timeout, not a node cut off from Redis (1013), whose clock also moved.
                #expect(device.closeCode == 1001)
            }
            let status = try await app.call(.post, "/status/query", ["userIds": ["alice"]])
            #expect(status.body["statuses"][0]["statusType"].string == "offline")
        }
    }

    @Test func framesKeepASocketAlivePastTheTimeout() async throws {
        let clock = ManualNodeClock()
        try await withStatusd(.live, configure: clock.install) { api in
            let app = try await api.createApp(config: ["heartbeatTimeoutSeconds": 5])
            try await app.createUsers(["alice"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "chatty")) { device, _ in
                // Eight seconds of the node's time, a frame every two: never five without one.
                for _ in 0..<4 {
                    try await clock.step(by: .seconds(2))
                    _ = try await device.request("heartbeat")
                }
                #expect(!device.isClosed)
            }
        }
    }

    @Test func subscriptionsAreDroppedAfterRetentionButNeverWhileOnline() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "subscriptionRetentionSeconds": 1])
            try await app.createUsers(["alice", "bob", "carol"])
            // Carol never comes online: her list expires one retention period after its last change.
            _ = try await app.call(.post, "/users/carol/subscriptions", ["userIds": ["alice"]])
            // Bob is online while the retention period passes.
            try await app.withDevice(port: api.client.port!, userId: "bob", DeviceOptions(deviceId: "b1")) { device, _ in
                _ = try await device.request("subscribeUserStatus", ["userIds": ["alice"]])
                try await Task.sleep(for: .milliseconds(1600))
                #expect(try await app.call(.get, "/users/bob/subscriptions").body["userIds"].strings == ["alice"])
            }
            #expect(try await app.call(.get, "/users/carol/subscriptions").body["userIds"].strings == [])
            try await Task.sleep(for: .milliseconds(1600))
            #expect(try await app.call(.get, "/users/bob/subscriptions").body["userIds"].strings == [])
        }
    }
}
