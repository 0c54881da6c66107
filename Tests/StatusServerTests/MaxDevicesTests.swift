import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §3 `maxDevicesPerUser`: a login past it kicks the user's earliest-connected device, which receives
/// `{"event": "kicked", "reason": "tooManyDevices"}` and is closed; the login itself succeeds.
@Suite(.redis) struct MaxDevicesTests {
    @Test func aLoginPastTheLimitKicksTheEarliestConnectedDevice() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["maxDevicesPerUser": 2])
            try await app.createUsers(["alice"])
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "first")) { first, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "second")) { second, _ in
                    try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "third")) { _, welcome in
                        let devices = welcome["status"]["onlineDevices"].array.compactMap { $0["deviceId"].string }
                        #expect(Set(devices) == ["second", "third"])
                        let kicked = try await first.next { $0["event"].string == "kicked" }
                        #expect(kicked["reason"].string == "tooManyDevices")
                        try await first.waitClosed(timeout: .seconds(2))
                        #expect(!second.isClosed)
                    }
                }
            }
        }
    }

    @Test func backendDevicesCountTowardsTheLimitToo() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["maxDevicesPerUser": 1])
            try await app.createUsers(["alice"])
            _ = try await app.call(.post, "/users/alice/devices/a/login", ["platform": "web"])
            let second = try await app.call(.post, "/users/alice/devices/b/login", ["platform": "ios"])
            #expect(second.status == 200)
            #expect(second.body["onlineDevices"] == [["deviceId": "b", "platform": "ios", "state": "active"]])
            #expect(second.body["statusType"].string == "online")
        }
    }

    @Test func theLimitIsOneToOneHundred() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            #expect(try await app.admin(.get, "/v1/apps/\(app.appId)").body["config"]["maxDevicesPerUser"] == 10)
            for bad: JSONValue in [0, 101, "3", nil] {
                let response = try await app.admin(.patch, "/v1/apps/\(app.appId)/config", ["maxDevicesPerUser": bad])
                expectError(response, 400, "INVALID_REQUEST")
            }
            #expect(try await app.patchConfig(["maxDevicesPerUser": 100])["maxDevicesPerUser"] == 100)
        }
    }
}
