import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §6 and §9, "nothing lost": from the moment a subscribe or a friendship is answered, every later change of the
/// target reaches the watcher's devices, on this node or another, even while the node has not yet heard the target's
/// channel (docs/bus.md `relations` `since`). Each pair changes the target with no pause after the answer, the
/// interleaving a real client produces first, and the change is written the fastest way there is: the script itself,
/// from a Redis client of the test's own (as another node would), one round trip after the answer.
@Suite(.redis) struct SubscribeThenChangeTests {
    /// Pairs run at once; each is a fresh watcher with one device and a fresh target.
    static let concurrency = 20

    enum Via: Sendable {
        /// The watcher's device sends `subscribeUserStatus` on its socket.
        case webSocket
        /// The app backend subscribes for the watcher (server API) while the device is connected.
        case serverAPI
        /// The app backend makes the two users friends (`friendStatusNotify`).
        case friendship
    }

    @Test(arguments: [Via.webSocket, Via.serverAPI, Via.friendship])
    func aChangeRightAfterTheAnswerIsHeard(via: Via) async throws {
        try await withStatusd(.live) { api in
            let missed = try await Self.pairs(100, api: api, devicePort: api.client.port!, via: via)
            #expect(missed.isEmpty, "\(missed.count) of 100 changes made right after the answer were never delivered: \(missed.prefix(5))")
        }
    }

    /// The watcher's device is on another node than the one that answers the subscribe: that node learns of the
    /// subscription from the bus, and must still deliver what the target changed before it heard the target.
    @Test func aChangeRightAfterTheAnswerIsHeardOnAnotherNode() async throws {
        let adminKey = "admin-" + UUID().uuidString
        try await withStatusd(.live, adminKey: adminKey) { api in
            let node = try await ChildNode(adminKey: adminKey, nodeId: "sub-" + UUID().uuidString.prefix(8).lowercased())
            defer { node.crash() }
            let missed = try await Self.pairs(60, api: api, devicePort: node.port, via: .serverAPI)
            #expect(missed.isEmpty, "\(missed.count) of 60 changes were never delivered on the other node: \(missed.prefix(5))")
        }
    }

    /// The node's pub/sub connections are killed between the subscribe and the change: the change is published while
    /// nobody listens, and the gap repair delivers it.
    @Test func aChangeWhileTheBusIsDownAfterASubscribeIsHeard() async throws {
        let nodeId = BusFault.nodeId("gap")
        try await withStatusd(.live, configure: BusFault.naming(nodeId)) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["watcher", "target"])
            try await withRunningClient(try TestRedis.configuration, "fault") { redis in
                try await app.withDevice(port: api.client.port!, userId: "watcher", DeviceOptions(deviceId: "w1")) { device, _ in
                    let reply = try await device.request("subscribeUserStatus", ["userIds": ["target"]])
                    #expect(reply["ok"] == true)
                    #expect(try await BusFault.killBusConnections(of: nodeId, using: redis) > 0)
                    _ = try await app.setStatus("target", "while down")
                    let event = try await device.next(timeout: .seconds(3)) {
                        $0["event"].string == "onUserStatusChanged" && $0["statuses"][0]["customStatus"].string == "while down"
                    }
                    #expect(event["statuses"][0]["userId"] == "target")
                }
            }
        }
    }

    /// A subscribe answers the targets' statuses (SPEC §4), and the change made right after carries a higher version:
    /// the device never goes back to an older one, and hears the change once.
    @Test func theReplyCarriesTheStatusesAndTheChangeFollowsOnce() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["watcher", "target", "blocker"])
            _ = try await app.setStatus("target", "before")
            _ = try await app.call(.put, "/users/blocker/blocks", ["userIds": ["watcher"]])
            try await app.withDevice(port: api.client.port!, userId: "watcher", DeviceOptions(deviceId: "w1")) { device, _ in
                let reply = try await device.request("subscribeUserStatus", ["userIds": ["target", "blocker", "ghost"]])
                let statuses = reply["result"]["statuses"].array
                #expect(statuses.map { $0["userId"].string } == ["target", "blocker"])
                #expect(statuses.first?["customStatus"] == "before")
                // The blocked pair sees the offline mask (SPEC §4).
                #expect(statuses.last?["statusType"] == "offline")
                let answered = statuses.first?["version"].int ?? 0
                _ = try await app.setStatus("target", "after")
                let events = try await device.statusEvents(of: "target", settle: .milliseconds(600))
                #expect(events.count == 1, "\(events)")
                #expect(events.first?["customStatus"] == "after")
                #expect((events.first?["version"].int ?? 0) > answered)
            }
        }
    }

    /// Runs `count` subscribe-then-change pairs, `concurrency` at a time, and returns the targets whose change the
    /// watcher's device did not receive within 3 s.
    static func pairs(_ count: Int, api: APIClient, devicePort: Int, via: Via) async throws -> [String] {
        var config = JSONValue.object(["plan": "premium", "statusQuery": true])
        if via == .friendship { config = ["plan": "premium", "friendStatusNotify": true] }
        let app = try await api.createApp(config: config)
        try await app.createUsers((0..<count).flatMap { ["w\($0)", "t\($0)"] })
        return try await withRunningClient(try TestRedis.configuration, "writer") { redis in
            let writer = StatusRepository(redis: redis, scripts: try ScriptLibrary.load(), clock: SystemNodeClock())
            return try await pairs(count, app: app, devicePort: devicePort, via: via, writer: writer)
        }
    }

    private static func pairs(_ count: Int, app: APIClient, devicePort: Int, via: Via, writer: StatusRepository) async throws -> [String] {
        var missed: [String] = []
        for start in stride(from: 0, to: count, by: concurrency) {
            try await withThrowingTaskGroup(of: String?.self) { group in
                for index in start..<min(start + concurrency, count) {
                    group.addTask {
                        try await app.withDevice(port: devicePort, userId: "w\(index)", DeviceOptions(deviceId: "d\(index)")) { device, _ in
                            let target = "t\(index)"
                            switch via {
                            case .webSocket:
                                let reply = try await device.request("subscribeUserStatus", ["userIds": [.string(target)]])
                                guard reply["ok"] == true else { throw TestAppError(message: "subscribe failed: \(reply)") }
                            case .serverAPI:
                                _ = expectOK(try await app.subscribe("w\(index)", [target]))
                            case .friendship:
                                _ = expectOK(try await app.call(.put, "/users/w\(index)/friends", ["userIds": [.string(target)]]))
                            }
                            _ = try await writer.setCustomStatus(appId: app.appId, userId: target, value: "changed-\(index)", keepMs: nil)
                            let heard = try? await device.next(timeout: .seconds(3)) {
                                $0["event"].string == "onUserStatusChanged" && $0["statuses"][0]["customStatus"].string == "changed-\(index)"
                            }
                            return heard == nil ? target : nil
                        }
                    }
                }
                for try await result in group { if let result { missed.append(result) } }
            }
        }
        return missed
    }
}
