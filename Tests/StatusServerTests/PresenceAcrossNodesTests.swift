import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.5 and §10.2 across nodes: the node that receives a change builds each recipient's view from the bus message
/// alone, and an expiry is cleared by whichever node is alive when it falls due.
@Suite(.redis) struct PresenceAcrossNodesTests {
    @Test func aNodeShowsTheOwnViewToTheUserAndThePublicViewToOthers() async throws {
        let adminKey = "admin-" + UUID().uuidString
        try await withStatusd(.live, adminKey: adminKey) { api in
            let node = try await ChildNode(adminKey: adminKey, nodeId: "views-" + UUID().uuidString.prefix(8).lowercased())
            defer { node.crash() }
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "watcher"])
            expectOK(try await app.subscribe("watcher", ["alice"]))
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "watcher", DeviceOptions(deviceId: "w1")) { watcher, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "a-here")) { own, _ in
                    try await app.withDevice(port: node.port, userId: "alice", DeviceOptions(deviceId: "a-there")) { device, _ in
                        // alice online as the watcher sees her (an event of her status before the connect, version 0, may
                        // come first, depending on when the watcher's subscription was loaded).
                        let online = try await watcher.next { frame in
                            frame["event"] == "onUserStatusChanged" && frame["statuses"][0]["userId"] == "alice"
                                && frame["statuses"][0]["statusType"] == "online"
                        }
                        let shown = try #require(online["statuses"][0]["version"].int)
                        let reply = try await device.request("setSelfStatus", ["availability": "invisible", "customStatus": "shh"])
                        let version = try #require(reply["result"]["version"].int)
                        let mine = try await own.next { $0["event"] == "onUserStatusChanged" && $0["statuses"][0]["version"].int == version }
                        #expect(mine["statuses"][0]["availability"] == "invisible" && mine["statuses"][0]["customStatus"] == "shh")
                        // A copy of an event the watcher has (same version) may still come: clients drop it by version
                        // (SPEC §2); what counts is the next newer one.
                        let seen = try await watcher.next { frame in
                            frame["event"] == "onUserStatusChanged" && frame["statuses"][0]["userId"] == "alice"
                                && (frame["statuses"][0]["version"].int ?? 0) > shown
                        }["statuses"][0]
                        #expect(seen["statusType"] == "offline" && seen["onlineDevices"] == [] && !seen.has("customStatus"))
                        #expect(!seen.has("availability"))
                        // An edit while invisible reaches alice's devices only.
                        _ = try await device.request("setSelfStatus", ["customStatus": "still shh"])
                        _ = try await own.next { $0["event"] == "onUserStatusChanged" && $0["statuses"][0]["version"].int == version + 1 }
                        let seenVersion = try #require(seen["version"].int)
                        #expect(try await watcher.statusEvents(of: "alice").filter { ($0["version"].int ?? 0) > seenVersion }.isEmpty)
                    }
                }
            }
        }
    }

    @Test(.tags(.runsAlone)) func anExpiryIsClearedByTheNodeThatIsLeft() async throws {
        let adminKey = "admin-" + UUID().uuidString
        try await withStatusd(.live, adminKey: adminKey) { api in
            let node = try await ChildNode(adminKey: adminKey, nodeId: "expiry-" + UUID().uuidString.prefix(8).lowercased())
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            // Set on node B, which dies before the moment.
            let body = #"{"customStatus":"on B","clearAfterSeconds":1}"#
            let response = try await RawHTTP.exchange(
                port: node.port,
                "PUT /v1/apps/\(app.appId)/users/alice/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.apiKey)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
            )
            #expect(response.status == 200)
            node.crash()
            let deadline = ContinuousClock.now + .seconds(4)
            while try await app.ownStatus("alice").has("customStatus") {
                guard ContinuousClock.now < deadline else { throw TestAppError(message: "not cleared") }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await app.ownStatus("alice")["version"] == 2)
        }
    }
}
