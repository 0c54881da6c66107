import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §9: several nodes on one Redis. A change on one node reaches devices on another, and a node that dies has its
/// devices turned offline by the others within 30 seconds.
@Suite(.redis) struct ClusterTests {
    /// Runs `body` with node A in process (`api`, its port is `api.client.port`), node B as a child process, and a
    /// premium app with the users `alice` and `watcher`.
    private func withTwoNodes(_ body: @Sendable (APIClient, APIClient, ChildNode) async throws -> Void) async throws {
        let adminKey = "admin-" + UUID().uuidString
        try await withStatusd(.live, adminKey: adminKey) { api in
            let node = try await ChildNode(adminKey: adminKey, nodeId: "child-" + UUID().uuidString.prefix(8).lowercased())
            defer { node.crash() }
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "watcher"])
            try await body(api, app, node)
        }
    }

    @Test func changesCrossNodesAndADeadNodesDevicesGoOffline() async throws {
        try await withTwoNodes { api, app, node in
            _ = try await app.call(.post, "/users/watcher/subscriptions", ["userIds": ["alice"]])
            try await app.withDevice(port: api.client.port!, userId: "watcher", DeviceOptions(deviceId: "w1")) { watcher, _ in
                try await app.withDevice(port: node.port, userId: "alice", DeviceOptions(deviceId: "a1")) { alice, welcome in
                    #expect(welcome["status"]["statusType"].string == "online")
                    #expect(try await watcher.nextStatus(of: "alice")["statusType"].string == "online")
                    _ = try await alice.request("setSelfStatus", ["customStatus": "on node B"])
                    #expect(try await watcher.nextStatus(of: "alice")["customStatus"].string == "on node B")
                    let killed = ContinuousClock.now
                    node.crash()
                    let offline = try await watcher.nextStatus(of: "alice", timeout: .seconds(30))
                    #expect(offline["statusType"].string == "offline")
                    #expect(!offline.has("customStatus"))
                    #expect(ContinuousClock.now - killed < .seconds(30))
                }
            }
        }
    }

    @Test(.tags(.runsAlone)) func aSubscriptionMadeOnOneNodeRoutesEventsOnAnother() async throws {
        try await withTwoNodes { api, app, node in
            try await app.withDevice(port: api.client.port!, userId: "watcher", DeviceOptions(deviceId: "w1")) { watcher, _ in
                try await app.withDevice(port: node.port, userId: "watcher", DeviceOptions(deviceId: "w2")) { other, _ in
                    // Subscribe from the device on node B; the watcher's device on node A must start hearing alice.
                    _ = try await other.request("subscribeUserStatus", ["userIds": ["alice"]])
                    try await Task.sleep(for: .milliseconds(300))
                    _ = try await app.call(.put, "/users/alice/status", ["customStatus": "hi"])
                    #expect(try await watcher.nextStatus(of: "alice")["customStatus"].string == "hi")
                    #expect(try await other.nextStatus(of: "alice")["customStatus"].string == "hi")
                }
            }
        }
    }
}
