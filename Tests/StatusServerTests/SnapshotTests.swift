import Foundation
import Logging
import RedisClient
import StatusCore
import StatusdClient
import Testing

@testable import StatusServer

/// SPEC §10.6 snapshots: `&snapshot=true` gives, right after the welcome (after a resume's frame when both), one
/// `onUserStatusChanged` with `"snapshot": true` and the current status of everyone the device may hear about, even when
/// that is nobody; an `all`/`roles:` scope adds the users it sees online, at most the bound, with `"truncated": true`
/// past it. A resume whose log of recent changes passed its bound sends such a snapshot instead of dropping the rest
/// (SPEC §10.7).
@Suite(.redis) struct SnapshotTests {
    /// The frames a device received, decoded, in order (coalesced frames kept whole).
    private func frames(_ device: TestDevice) throws -> [JSONValue] {
        try device.rawFrames.map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
    }

    @Test func theSnapshotFollowsTheWelcomeWithWhatTheDeviceMayHear() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "friendStatusNotify": true])
            let facade = try app.appFacade()
            for user in ["watcher", "alice", "bob", "carol", "dave", "loner"] { try await facade.putUser(user) }
            try await facade.subscribeUserStatus(["alice", "bob"], for: "watcher")
            try await facade.addFriends("watcher", ["carol"])
            try await facade.addBlocks("bob", ["watcher"])
            try await facade.setSelfStatus("alice", customStatus: "here")
            let maskedBob = try await app.query("watcher", ["bob"]).body["statuses"][0]
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "watcher", DeviceOptions(deviceId: "w1", snapshot: true)) { device, _ in
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                let received = try frames(device)
                #expect(received.first?["event"] == "welcome")
                let snapshot = try #require(received.dropFirst().first)
                #expect(snapshot["snapshot"] == true)
                #expect(snapshot.has("truncated") == false)
                // bob blocked the watcher: listed in the block mask; dave is no relation.
                #expect(snapshot["statuses"].array.compactMap { $0["userId"].string } == ["alice", "bob", "carol"])
                #expect(snapshot["statuses"][0]["customStatus"] == "here")
                #expect(snapshot["statuses"][1] == maskedBob)
            }
            try await app.withDevice(port: port, userId: "loner", DeviceOptions(deviceId: "l1", snapshot: true)) { device, _ in
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                let snapshot = try #require(try frames(device).dropFirst().first)
                #expect(snapshot == ["event": "onUserStatusChanged", "snapshot": true, "statuses": []])
            }
            let refused = try await app.withDevice(port: port, userId: "loner", DeviceOptions(deviceId: "l2", snapshot: true)) { _, _ in 0 }
            #expect(refused == 0)
        }
    }

    @Test func anAppWideScopeListsTheUsersItSeesOnlineUpToTheBound() async throws {
        let smallScope: (inout ServerConfiguration) -> Void = { $0.snapshotScopeLimit = 3 }
        try await withStatusd(.live, configure: smallScope) { api in
            let app = try await api.createApp(config: premiumConfig)
            let online = ["o1", "o2", "o3", "o4"]
            let facade = try app.appFacade()
            for user in ["watcher", "offline"] + online { try await facade.putUser(user) }
            for user in online { try await facade.backendLogin(user, device: "d", platform: .web) }
            try await app.withDevice(port: api.client.port!, userId: "watcher", DeviceOptions(deviceId: "w1", presence: "all", snapshot: true)) {
                device,
                _ in
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                let snapshot = try #require(try frames(device).dropFirst().first)
                #expect(snapshot["statuses"].array.compactMap { $0["userId"].string } == ["o1", "o2", "o3"])
                #expect(snapshot["truncated"] == true)
            }
        }
    }

    @Test func aResumePastItsBoundSendsTheSnapshotInsteadOfDroppingTheRest() async throws {
        let smallLog: (inout ServerConfiguration) -> Void = { $0.resumeLogReadLimit = 3 }
        try await withStatusd(.live, configure: smallLog) { api in
            let app = try await api.createApp(config: premiumConfig)
            let online = ["o1", "o2", "o3", "o4", "o5"]
            try await app.createUsers(["watcher"] + online)
            for user in online { expectOK(try await app.login(user, "d")) }
            let port = api.client.port!
            let token = try await app.withDevice(port: port, userId: "watcher", DeviceOptions(deviceId: "w1", presence: "all")) { _, welcome in
                try #require(welcome["resume"].string)
            }
            for user in online { expectOK(try await app.setStatus(user, "moved")) }
            try await app.withDevice(port: port, userId: "watcher", DeviceOptions(deviceId: "w1", presence: "all", resume: token)) { device, _ in
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                let resumed = try #require(try frames(device).dropFirst().first)
                let users = resumed["statuses"].array.compactMap { $0["userId"].string }
                #expect(users == online + ["watcher"])
                #expect(resumed["statuses"].array.filter { $0["customStatus"] == "moved" }.count == online.count)
            }
        }
    }

    @Test func snapshotTakesTrueOrFalseOnly() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let token = try await app.token(for: "alice")
            let refused = try await app.client.execute(
                uri: "/v1/connect?deviceId=d1&platform=web&snapshot=yes",
                method: .get,
                headers: [
                    .authorization: "Bearer \(token)", .upgrade: "websocket", .connection: "Upgrade", .secWebSocketKey: "dGhlIHNhbXBsZSBub25jZQ==",
                    .secWebSocketVersion: "13",
                ]
            ) { response in response.status.code }
            #expect(refused == 400)
        }
    }
}

extension SnapshotTests {
    static let blockConfig: JSONValue = [
        "plan": "premium", "statusQuery": true, "friendStatusNotify": true, "rateLimit": ["calls": 1000, "windowSeconds": 1],
    ]

    /// SPEC §10.5 blocks and §10.6: a user of the device's app-wide scope on either side of a block with the device's
    /// user is shown in the block mask (offline, no custom status, no lastActiveAt, the public version of when the
    /// block began), never as they are; so is the resume that falls back to the snapshot.
    @Test(arguments: ["alice", "mallory"], ["all", "roles:member"])
    func aBlockedUserOfTheScopeIsShownInTheMask(blocker: String, scope: String) async throws {
        let smallLog: (inout ServerConfiguration) -> Void = { $0.resumeLogReadLimit = 2 }
        try await withStatusd(.live, configure: smallLog) { api in
            let app = try await api.createApp(config: Self.blockConfig)
            try await app.createUsers(["mallory", "o1", "o2", "o3"])
            expectOK(try await app.call(.put, "/users/alice", ["role": "member"]))
            expectOK(try await app.login("alice", "phone"))
            expectOK(try await app.setStatus("alice", "around"))
            let blocked = blocker == "alice" ? "mallory" : "alice"
            expectOK(try await app.call(.put, "/users/\(blocker)/blocks", ["userIds": [.string(blocked)]]))
            let masked = try await app.query("mallory", ["alice"]).body["statuses"][0]
            #expect(masked["statusType"] == "offline" && !masked.has("customStatus"), "\(masked)")
            let port = try #require(api.client.port)
            let options = DeviceOptions(deviceId: "m1", presence: scope, snapshot: true)
            let token = try await app.withDevice(port: port, userId: "mallory", options) { device, welcome in
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                let snapshot = try #require(try frames(device).first { $0["snapshot"] == true })
                #expect(snapshot["statuses"].array.first { $0["userId"] == "alice" } == masked, "\(snapshot)")
                return try #require(welcome["resume"].string)
            }
            // More moved while away than the resume reads from the log: it sends the snapshot instead, masked alike.
            for user in ["o1", "o2", "o3"] { expectOK(try await app.login(user, "d")) }
            let resumed = DeviceOptions(deviceId: "m1", presence: scope, resume: token)
            try await app.withDevice(port: port, userId: "mallory", resumed) { device, _ in
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                let frame = try #require(try frames(device).dropFirst().first)
                #expect(frame["statuses"].array.first { $0["userId"] == "alice" } == masked, "\(frame)")
            }
        }
    }

    /// SPEC §10.6: a subscription or a friend on either side of a block is listed in the block mask, so that a client
    /// replacing its cache with the snapshot drops what it knew before the block.
    @Test func aSubscriptionOrFriendOnEitherSideOfABlockIsListedInTheMask() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.blockConfig)
            try await app.createUsers(["watcher", "bob", "carol", "dan"])
            expectOK(try await app.subscribe("watcher", ["bob", "dan"]))
            expectOK(try await app.call(.put, "/users/watcher/friends", ["userIds": ["carol"]]))
            for user in ["bob", "carol", "dan"] {
                expectOK(try await app.login(user, "d"))
                expectOK(try await app.setStatus(user, "hello"))
            }
            expectOK(try await app.call(.put, "/users/watcher/blocks", ["userIds": ["bob"]]))
            expectOK(try await app.call(.put, "/users/carol/blocks", ["userIds": ["watcher"]]))
            let seen = try await app.query("watcher", ["bob", "carol", "dan"]).body["statuses"].array
            #expect(seen.map { $0["statusType"] } == ["offline", "offline", "online"])
            try await app.withDevice(port: try #require(api.client.port), userId: "watcher", DeviceOptions(deviceId: "w1", snapshot: true)) {
                device,
                _ in
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                let snapshot = try #require(try frames(device).first { $0["snapshot"] == true })
                #expect(snapshot["statuses"].array == seen, "\(snapshot)")
            }
        }
    }
}

/// SPEC §10.6 and §10.7 (one request does bounded work): a snapshot's cost is bounded by what it can return, not by the
/// app's size. 2,000 users of role `member` are online; a device with presence `roles:nonexistent` asks for a snapshot:
/// it gets an empty one, having read no user's status. Counted by Redis itself (`INFO commandstats`) on a redis-server
/// of the test's own.
@Suite(.redis) struct SnapshotCostTests {
    static let users = 2_000

    @Test func aRoleNobodyHasCostsTheSnapshotNoUserRead() async throws {
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        let redis = RedisClient(configuration: server.configuration, logger: Logger(label: "snapshot-cost"))
        do {
            try await withStatusd(.live, configure: server.install) { api in
                let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true])
                try await app.createUsers(["watcher"])
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<Self.users {
                        if index >= 16 { try await group.next() }
                        group.addTask {
                            expectOK(try await app.call(.put, "/users/m\(index)", ["role": "member"]))
                            expectOK(try await app.login("m\(index)", "d"))
                        }
                    }
                    try await group.waitForAll()
                }
                let port = try #require(api.client.port)
                let options = DeviceOptions(deviceId: "w1", presence: "roles:nonexistent", snapshot: true)
                let before = try await RefusalCostTests.commandCounts(redis)
                let snapshot = try await app.withDevice(port: port, userId: "watcher", options) { device, _ in
                    try await device.next { $0["snapshot"] == true }
                }
                let after = try await RefusalCostTests.commandCounts(redis)
                #expect(snapshot["statuses"] == [] && !snapshot.has("truncated"), "\(snapshot)")
                let reads = after["hmget", default: 0] - before["hmget", default: 0]
                let pages = after["zrangebylex", default: 0] - before["zrangebylex", default: 0]
                #expect(reads < 20, "the snapshot read \(reads) statuses")
                #expect(pages <= 2, "the snapshot read \(pages) pages of the online index")
            }
        } catch {
            await redis.close()
            throw error
        }
        await redis.close()
    }
}
