import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §3 `loginPolicy` and §7: a login kicks the devices the policy names, which receive `{"event": "kicked",
/// "reason": "loginPolicy"}` and are closed; the login succeeds in the same step and subscribers see one change at most.
@Suite(.redis) struct LoginPolicyTests {
    @Test func singlePerPlatformKicksTheOtherDeviceOfThatPlatformOnly() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["loginPolicy": "singlePerPlatform"])
            try await app.createUsers(["alice"])
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "web-1", platform: "web")) { web, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone", platform: "ios")) { phone, _ in
                    try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "web-2", platform: "web")) { _, welcome in
                        let devices = welcome["status"]["onlineDevices"].array.compactMap { $0["deviceId"].string }
                        #expect(devices == ["phone", "web-2"])
                        let kicked = try await web.next { $0["event"].string == "kicked" }
                        #expect(kicked["reason"].string == "loginPolicy")
                        try await web.waitClosed(timeout: .seconds(3))
                        try await Task.sleep(for: .milliseconds(200))
                        #expect(!phone.isClosed)
                        #expect(
                            try await app.backendStatus("alice")["onlineDevices"] == [
                                ["deviceId": "phone", "platform": "ios", "state": "active"],
                                ["deviceId": "web-2", "platform": "web", "state": "active"],
                            ]
                        )
                    }
                }
            }
        }
    }

    @Test func singleKicksEveryOtherDeviceAlsoForABackendLogin() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["loginPolicy": "single"])
            try await app.createUsers(["alice"])
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "web", platform: "web")) { web, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone", platform: "ios")) { phone, _ in
                    // The second socket already kicked the first.
                    #expect(try await web.next { $0["event"].string == "kicked" }["reason"].string == "loginPolicy")
                    let login = expectOK(try await app.login("alice", "desk", platform: "windows"))
                    #expect(login["onlineDevices"] == [["deviceId": "desk", "platform": "windows", "state": "active"]])
                    #expect(login["statusType"].string == "online")
                    #expect(try await phone.next { $0["event"].string == "kicked" }["reason"].string == "loginPolicy")
                    try await phone.waitClosed(timeout: .seconds(3))
                    try await web.waitClosed(timeout: .seconds(3))
                }
            }
        }
    }

    @Test func backendDevicesAreKickedByPolicyToo() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["loginPolicy": "singlePerPlatform"])
            try await app.createUsers(["alice"])
            expectOK(try await app.login("alice", "a1", platform: "android"))
            expectOK(try await app.login("alice", "w1", platform: "web"))
            let second = expectOK(try await app.login("alice", "a2", platform: "android"))
            #expect(
                second["onlineDevices"] == [
                    ["deviceId": "a2", "platform": "android", "state": "active"], ["deviceId": "w1", "platform": "web", "state": "active"],
                ]
            )
            // The kicked device is gone: its heartbeat finds nothing.
            let heartbeat = expectOK(try await app.call(.post, "/users/alice/devices/a1/heartbeat"))
            #expect(heartbeat["onlineDevices"].array.count == 2)
        }
    }

    @Test func multiKeepsEveryDeviceUpToTheLimit() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            #expect(try await app.admin(.get, "/v1/apps/\(app.appId)").body["config"]["loginPolicy"] == "multi")
            try await app.createUsers(["alice"])
            for id in ["w1", "w2", "w3"] { expectOK(try await app.login("alice", id, platform: "web")) }
            #expect(try await app.backendStatus("alice")["onlineDevices"].array.count == 3)
        }
    }

    @Test func policyKicksComeBeforeTheDeviceLimitWhichKicksTheEarliestOfTheRest() async throws {
        let clock = ManualNodeClock()
        try await withStatusd(.live, configure: clock.install) { api in
            let app = try await api.createApp(config: ["maxDevicesPerUser": 3])
            try await app.createUsers(["alice"])
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone", platform: "ios")) { phone, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "tablet", platform: "android")) { tablet, _ in
                    try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "web-1", platform: "web")) { web, _ in
                        try await app.patchConfig(["loginPolicy": "singlePerPlatform", "maxDevicesPerUser": 2])
                        clock.advance(by: AppRegistry.cacheTTL + .milliseconds(100))
                        let login = expectOK(try await app.login("alice", "web-2", platform: "web"))
                        #expect(
                            login["onlineDevices"] == [
                                ["deviceId": "tablet", "platform": "android", "state": "active"],
                                ["deviceId": "web-2", "platform": "web", "state": "active"],
                            ]
                        )
                        #expect(try await web.next { $0["event"].string == "kicked" }["reason"].string == "loginPolicy")
                        #expect(try await phone.next { $0["event"].string == "kicked" }["reason"].string == "tooManyDevices")
                        try await Task.sleep(for: .milliseconds(200))
                        #expect(!tablet.isClosed)
                    }
                }
            }
        }
    }

    @Test func subscribersSeeNoChangeWhenAKickingLoginKeepsTheUserOnline() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "loginPolicy": "single"])
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("bob", ["alice"]))
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-phone")) { bob, _ in
                expectOK(try await app.login("alice", "first", platform: "web"))
                let online = try await bob.nextStatus(of: "alice")
                #expect(online["statusType"].string == "online")
                expectOK(try await app.login("alice", "second", platform: "web"))
                #expect(try await bob.statusEvents(of: "alice").isEmpty)
                #expect(try await app.backendStatus("alice")["version"] == online["version"])
            }
        }
    }

    @Test func aBadPolicyIsRefusedAndChangesNothing() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            for bad: JSONValue in ["singleDevice", "", nil, 1, ["single"]] {
                let response = try await app.admin(.patch, "/v1/apps/\(app.appId)/config", ["loginPolicy": bad, "plan": "premium"])
                expectError(response, 400, "INVALID_REQUEST")
            }
            let config = try await app.admin(.get, "/v1/apps/\(app.appId)").body["config"]
            #expect(config["loginPolicy"] == "multi")
            #expect(config["plan"] == "basic")
            #expect(try await app.patchConfig(["loginPolicy": "single"])["loginPolicy"] == "single")
        }
    }
}
