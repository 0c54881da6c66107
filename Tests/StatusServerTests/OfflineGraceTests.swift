import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.3 `offlineGraceSeconds`: a last device that drops (not a logout, not a kick) leaves its user `online` to
/// everyone for the grace, with nothing notified; a reconnect within it, to any node, changes nothing for others and
/// keeps the custom status; otherwise the user goes `offline` when it ends, with `lastActiveAt` = the drop. The webhook
/// hears the drop at once, with `statusType` `online`. The grace lives in Redis, so it outlives the node that began it.
@Suite(.redis) struct OfflineGraceTests {
    static func config(grace: Int) -> JSONValue {
        ["plan": "premium", "statusQuery": true, "offlineGraceSeconds": .int(Int64(grace))]
    }

    @Test func aReconnectWithinTheGraceShowsOthersNothingAndKeepsTheCustomStatus() async throws {
        try await withStatusd(.live) { api in
            // A grace longer than the test: on a machine busy enough that the steps between the drop and the reconnect
            // take seconds, the reconnect still comes within it (the test never waits for the grace to end).
            let app = try await api.createApp(config: Self.config(grace: 10))
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("bob", ["alice"]))
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-1")) { watcher, _ in
                let set = try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { device, _ in
                    _ = try await watcher.nextStatus(of: "alice")
                    let reply = try await device.request("setSelfStatus", ["customStatus": "on the train"])
                    _ = try await watcher.nextStatus(of: "alice")
                    return reply["result"]
                }
                // Dropped (once the node filed it, no device): still online to everyone, nothing told.
                let deadline = ContinuousClock.now + .seconds(3)
                while try await app.ownStatus("alice")["onlineDevices"] != [] {
                    guard ContinuousClock.now < deadline else { throw TestAppError(message: "the drop was not filed") }
                    try await Task.sleep(for: .milliseconds(20))
                }
                let during = try await app.query("bob", ["alice"]).body["statuses"][0]
                #expect(during["statusType"] == "online" && during["customStatus"] == "on the train")
                #expect(during["version"] == set["version"])
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { _, welcome in
                    #expect(welcome["status"]["customStatus"] == "on the train")
                    #expect(welcome["status"]["version"] == set["version"])
                }
                #expect(try await watcher.statusEvents(of: "alice", settle: .milliseconds(300)).isEmpty)
            }
        }
    }

    @Test func withoutAReconnectTheUserGoesOfflineWhenTheGraceEndsAtTheDropsMoment() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.config(grace: 1))
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("bob", ["alice"]))
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-1")) { watcher, _ in
                let version = try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { device, _ in
                    _ = try await watcher.nextStatus(of: "alice")
                    let reply = try await device.request("setSelfStatus", ["customStatus": "gone soon"])
                    _ = try await watcher.nextStatus(of: "alice")
                    return try #require(reply["result"]["version"].int)
                }
                let dropped = Int64(Date().timeIntervalSince1970 * 1000)
                let offline = try await watcher.nextStatus(of: "alice", timeout: .seconds(4))
                let heard = Int64(Date().timeIntervalSince1970 * 1000)
                #expect(offline["statusType"] == "offline" && !offline.has("customStatus"))
                #expect(offline["version"].int == version + 1)
                #expect(heard - dropped >= 900, "offline after \(heard - dropped) ms, before the grace ended")
                // The grace's end is found by the nodes' sweep (every quarter second): 1–1.25 s after the drop, later
                // only by what a busy machine adds (2.1 s seen with the whole CI beside it).
                #expect(heard - dropped < 3000, "offline \(heard - dropped) ms after the drop")
                // lastActiveAt is the drop, not the end of the grace.
                let lastActive = try #require(offline["lastActiveAt"].int)
                #expect(abs(lastActive - dropped) < 300, "lastActiveAt \(lastActive - dropped) ms from the drop")
                #expect(try await watcher.statusEvents(of: "alice", settle: .milliseconds(300)).isEmpty)
            }
        }
    }

    @Test func logoutAndKickAreNotGraced() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.config(grace: 30))
            try await app.createUsers(["alice", "carol"])
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { device, _ in
                let reply = try await device.request("logout")
                #expect(reply["result"]["statusType"] == "unlogined")
            }
            #expect(try await app.ownStatus("alice")["statusType"] == "unlogined")
            expectOK(try await app.login("carol", "desk"))
            expectOK(try await app.call(.post, "/users/carol/kick", [:]))
            #expect(try await app.ownStatus("carol")["statusType"] == "unlogined")
        }
    }

    @Test func theWebhookHearsTheDropAtOnceAsOnline() async throws {
        let receiver = WebhookReceiver(planned: [])
        try await receiver.run { url in
            try await withStatusd(.live) { api in
                var config = WebhookTests.webhookConfig(url)
                if case .object(var fields) = config {
                    fields["offlineGraceSeconds"] = 30
                    config = .object(fields)
                }
                let app = try await api.createApp(config: config)
                try await app.createUsers(["alice"])
                let port = try #require(api.client.port)
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { _, _ in }
                // Long before the 30 s grace ends (at once, not at its end), with room for a busy machine.
                let requests = try await receiver.waitUntil(timeout: .seconds(10)) { $0.contains { $0.json["action"] == "disconnect" } }
                let drop = try #require(requests.first { $0.json["action"] == "disconnect" }).json
                #expect(drop["statusType"] == "online" && drop["reason"] == "linkClose" && drop["deviceId"] == "phone")
            }
        }
    }

    /// A device that drops from one node and reconnects to another within the grace changes nothing for anyone else;
    /// and a grace begun by a node that then dies still ends, on the node that is left.
    @Test func theGraceHoldsAcrossNodesAndOutlivesTheNodeThatBeganIt() async throws {
        let adminKey = "admin-" + UUID().uuidString
        try await withStatusd(.live, adminKey: adminKey) { api in
            let node = try await ChildNode(adminKey: adminKey, nodeId: "grace-" + UUID().uuidString.prefix(8).lowercased())
            defer { node.crash() }
            let app = try await api.createApp(config: Self.config(grace: 2))
            try await app.createUsers(["alice", "bob", "carol"])
            expectOK(try await app.subscribe("bob", ["alice", "carol"]))
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-1")) { watcher, _ in
                let aliceOnline = try await app.withDevice(port: node.port, userId: "alice", DeviceOptions(deviceId: "phone")) { _, _ in
                    try await watcher.nextStatus(of: "alice")["version"].int ?? 0
                }
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { _, _ in
                    let events = try await watcher.statusEvents(of: "alice", settle: .milliseconds(500))
                    #expect(events.isEmpty)
                }
                // carol drops from the node, which dies before her grace ends: this node ends it.
                let carolOnline = try await app.withDevice(port: node.port, userId: "carol", DeviceOptions(deviceId: "tab")) { _, _ in
                    try await watcher.nextStatus(of: "carol")["version"].int ?? 0
                }
                try await Task.sleep(for: .milliseconds(200))
                node.crash()
                // The next change of carol is the end of her grace: offline, one version on. (A repeat of the online
                // event at its version is no change, SPEC §2, and is passed over.)
                let offline = try await watcher.nextStatus(of: "carol", newerThan: carolOnline, timeout: .seconds(5))
                #expect(offline["statusType"] == "offline")
                #expect(offline["version"].int == carolOnline + 1)
                // alice went on the grace too when her second device closed; she ends offline as well.
                let aliceOffline = try await watcher.nextStatus(of: "alice", newerThan: aliceOnline, timeout: .seconds(5))
                #expect(aliceOffline["statusType"] == "offline")
                #expect(aliceOffline["version"].int == aliceOnline + 1)
            }
        }
    }

    /// A node that dies with its devices: once its lease is gone the survivor files them as dropped, which begins a
    /// grace; the devices reconnecting to the survivor within it are no flap for their watchers.
    @Test func aNodeDeathWithAGraceIsNoFlap() async throws {
        let adminKey = "admin-" + UUID().uuidString
        let shortLease: (inout ServerConfiguration) -> Void = { $0.nodeLeaseSeconds = 3 }
        try await withStatusd(.live, adminKey: adminKey, configure: shortLease) { api in
            let node = try await ChildNode(adminKey: adminKey, nodeId: "flap-" + UUID().uuidString.prefix(8).lowercased(), leaseSeconds: 3)
            defer { node.crash() }
            let app = try await api.createApp(config: Self.config(grace: 10))
            let users = (0..<5).map { "u\($0)" }
            try await app.createUsers(users + ["bob"])
            expectOK(try await app.subscribe("bob", users))
            let port = try #require(api.client.port)
            let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "grace-test"))
            defer { Task { await redis.close() } }
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-1")) { watcher, _ in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for user in users {
                        _ = try await app.openDevice(port: node.port, userId: user, DeviceOptions(deviceId: "d")) { group.addTask(operation: $0) }
                    }
                    for user in users { _ = try await watcher.nextStatus(of: user, timeout: .seconds(5)) }
                    node.crash()
                    // The survivor files the dead node's devices once its lease ran out: graces begin.
                    let keys = RedisKeys(appId: app.appId)
                    let deadline = ContinuousClock.now + .seconds(10)
                    while try await redis.send("ZCARD", keys.graces).int ?? 0 < users.count {
                        guard ContinuousClock.now < deadline else { throw TestAppError(message: "the dead node's devices were not filed") }
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    for user in users {
                        let fields = try await redis.send("HMGET", keys.user(user).status, "t", "gu").array ?? []
                        #expect(fields.first?.string == "online" && fields.last?.string != nil, "\(user): \(fields)")
                    }
                    for user in users {
                        _ = try await app.openDevice(port: port, userId: user, DeviceOptions(deviceId: "d")) { group.addTask(operation: $0) }
                    }
                    let flaps = try await users.asyncMap { try await watcher.statusEvents(of: $0, settle: .milliseconds(100)) }.flatMap { $0 }
                    #expect(flaps.isEmpty, "\(flaps)")
                    group.cancelAll()
                }
            }
        }
    }

    /// A reconnect racing the end of the grace has exactly one outcome: the grace was cancelled (nothing changed,
    /// version as before) or it ended first (offline, then online: two changes). Never online with no device and no
    /// grace, never a version moved once. It runs alone (``Tag/runsAlone``): the race is timed on a live clock, in real
    /// time, which a busy machine stretches.
    @Test(.tags(.runsAlone)) func aReconnectRacingTheEndOfTheGraceHasOneOutcome() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.config(grace: 1))
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("bob", ["alice"]))
            let port = try #require(api.client.port)
            let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "grace-race-test"))
            defer { Task { await redis.close() } }
            let status = RedisKeys(appId: app.appId).user("alice").status
            let outcomes = try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-1")) { watcher, _ in
                var outcomes: [Int64: Int] = [:]
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { _, _ in }
                _ = try await watcher.statusEvents(of: "alice", settle: .milliseconds(100))
                for round in 0..<10 {
                    let before = try await app.ownStatus("alice")["version"].int ?? 0
                    // The grace's end is swept every 250 ms after its second: reconnect around it.
                    try await Task.sleep(for: .milliseconds(900 + 40 * round))
                    let moved = try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { _, welcome in
                        let after = try #require(welcome["status"]["version"].int)
                        #expect(welcome["status"]["statusType"] == "online")
                        #expect(after == before || after == before + 2, "version \(before) → \(after)")
                        let events = try await watcher.statusEvents(of: "alice", settle: .milliseconds(150))
                        #expect(events.count == Int(after - before), "\(events)")
                        return after - before
                    }
                    outcomes[moved, default: 0] += 1
                    // Dropped again: online with no device only while a grace runs (the devices are read first: once
                    // none is left, the status read after shows the grace unless it already ended).
                    let devices = try await redis.send("HLEN", RedisKeys(appId: app.appId).user("alice").devices).int ?? 0
                    let fields = try await redis.send("HMGET", status, "t", "gu").array ?? []
                    if fields.first?.string == "online" && devices == 0 { #expect(fields.last?.string != nil) }
                }
                return outcomes
            }
            #expect(outcomes.values.reduce(0, +) == 10)
        }
    }
}

extension Sequence {
    /// The results of `transform` on each element, in order, one at a time.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}

extension OfflineGraceTests {
    /// SPEC §10.3: a kick of all the user's devices, or the deletion of the user, during the grace ends it at once: the
    /// user is `unlogined` (or gone), and watchers are told as for any kick.
    @Test(arguments: ["kick", "delete"])
    func aKickOfEveryDeviceOrADeletionEndsTheGraceAtOnce(action: String) async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.config(grace: 30))
            try await app.createUsers(["alice", "bob"])
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-1", presence: "all")) { watcher, _ in
                let (set, shown) = try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { device, _ in
                    _ = try await watcher.nextStatus(of: "alice")
                    let reply = try await device.request("setSelfStatus", ["customStatus": "on the train"])
                    return (reply["result"], try await watcher.nextStatus(of: "alice"))
                }
                let dropped = Int64(Date().timeIntervalSince1970 * 1000)
                // The drop filed: online with no device, in the grace.
                let deadline = ContinuousClock.now + .seconds(3)
                while try await app.ownStatus("alice")["onlineDevices"] != [] {
                    guard ContinuousClock.now < deadline else { throw TestAppError(message: "the drop was not filed") }
                    try await Task.sleep(for: .milliseconds(20))
                }
                let filed = Int64(Date().timeIntervalSince1970 * 1000)
                #expect(try await app.ownStatus("alice")["statusType"] == "online", "in the grace")
                try await Task.sleep(for: .milliseconds(500))
                if action == "kick" {
                    #expect(expectOK(try await app.call(.post, "/users/alice/kick", [:])) == ["kicked": []])
                    let own = try await app.ownStatus("alice")
                    #expect(own["statusType"] == "unlogined" && !own.has("customStatus"), "\(own)")
                    #expect(own["version"].int == (set["version"].int ?? 0) + 1)
                    // lastActiveAt is the drop, not the kick.
                    let lastActive = try #require(own["lastActiveAt"].int)
                    #expect(lastActive >= dropped - 300 && lastActive <= filed + 50, "lastActiveAt \(lastActive - dropped) ms from the drop")
                } else {
                    #expect(try await app.call(.delete, "/users/alice").status == 204)
                }
                let told = try await watcher.nextStatus(of: "alice", timeout: .seconds(2))
                #expect(told["statusType"] == "unlogined" && !told.has("customStatus"), "\(told)")
                #expect(told["version"].int == (shown["version"].int ?? 0) + 1)
            }
        }
    }
}

extension OfflineGraceTests {
    /// SPEC §10.3: a grace is ended by the sweep of its index entry (in the app's slot, not the user's). Where that entry
    /// cannot be written, no grace starts: the drop takes the user offline at once, as without a grace, rather than
    /// leaving them online with no device and nothing to end it.
    @Test func aGraceWhoseIndexEntryCannotBeWrittenDoesNotStart() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "grace-index-test"))
        defer { Task { await redis.close() } }
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.config(grace: 30))
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("bob", ["alice"]))
            let port = try #require(api.client.port)
            let graces = RedisKeys(appId: app.appId).graces
            // The app's grace index cannot take a ZADD (WRONGTYPE) while this runs.
            _ = try await redis.send("SET", graces, "not a sorted set")
            let outcome: Result<JSONValue, any Error>
            do {
                outcome = .success(
                    try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-1")) { watcher, _ in
                        try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { _, _ in
                            _ = try await watcher.nextStatus(of: "alice")
                        }
                        return try await watcher.nextStatus(of: "alice", timeout: .seconds(3))
                    }
                )
            } catch {
                outcome = .failure(error)
            }
            _ = try await redis.send("DEL", graces)
            let offline = try outcome.get()
            #expect(offline["statusType"] == "offline", "\(offline)")
        }
    }
}
