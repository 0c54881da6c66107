import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// ARCHITECTURE "Fan-out": a device that stops reading has its queue capped and is disconnected (counted as gone).
@Suite(.redis) struct SlowConsumerTests {
    @Test func aDeviceThatStopsReadingIsDisconnectedAndGoesOffline() async throws {
        let smallQueues: (inout ServerConfiguration) -> Void = { $0.sessionBacklogBytes = 8 * 1024 }
        try await withStatusd(.live, configure: smallQueues) { api in
            let app = try await api.createApp(
                config: ["plan": "premium", "statusQuery": true, "maxDevicesPerUser": 100, "customStatusMaxBytes": 8192]
            )
            try await app.createUsers(["alice", "slow"])
            // Fat events: alice has many devices with long ids.
            for index in 0..<40 {
                let device = "device-\(index)-" + String(repeating: "x", count: 50)
                _ = try await app.call(.post, "/users/alice/devices/\(device)/login", ["platform": "web"])
            }
            _ = try await app.call(.post, "/users/slow/subscriptions", ["userIds": ["alice"]])
            try await app.withDevice(port: api.client.port!, userId: "slow", DeviceOptions(deviceId: "s1", reads: false)) { _, _ in
                var gone = false
                let padding = String(repeating: "x", count: 4096)
                for round in 0..<3000 where !gone {
                    // Fat events (4 KiB statuses), so the socket buffers fill up quickly.
                    _ = try await app.call(.put, "/users/alice/status", ["customStatus": .string("\(round) " + padding)])
                    if round % 100 == 99 {
                        let status = try await app.call(.post, "/status/query", ["userIds": ["slow"]])
                        gone = status.body["statuses"][0]["statusType"].string == "offline"
                    }
                }
                #expect(gone, "the slow device was never disconnected")
            }
        }
    }
}
