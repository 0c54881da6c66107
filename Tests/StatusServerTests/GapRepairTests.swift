import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.7 / §9: a device kicked, replaced or deleted while its node's bus feed was down is closed within 2 s of the
/// feed being back, as if the node had heard it (``DeviceRecordAudit``). The fault is real: the node's pub/sub
/// connections are killed with `CLIENT KILL` (``BusFault``), and the removal is made at once, while they reconnect.
@Suite(.redis) struct GapRepairTests {
    @Test func aKickMadeDuringABusGapClosesTheSocket() async throws {
        try await removedDuringAGap(expecting: "kicked") { app in
            _ = expectOK(try await app.call(.post, "/users/alice/kick", ["deviceId": "a1"]))
        }
    }

    @Test func aUserDeletedDuringABusGapLosesTheSocket() async throws {
        try await removedDuringAGap(expecting: "deleted") { app in
            _ = expectOK(try await app.call(.delete, "/users/alice"), 204)
        }
    }

    @Test func aDeviceReplacedByABackendLoginDuringABusGapIsClosed() async throws {
        try await removedDuringAGap(expecting: "replaced") { app in
            _ = expectOK(try await app.login("alice", "a1"))
        }
    }

    /// A device of alice connected to a live node; the node's pub/sub connections are killed, `remove` runs at once,
    /// and the socket must receive `kicked` with `reason` and close within 2 s of the feed being back (the
    /// resubscription takes a backoff of 50 ms and more: 3 s in all).
    private func removedDuringAGap(expecting reason: String, remove: @escaping @Sendable (APIClient) async throws -> Void) async throws {
        let nodeId = BusFault.nodeId("gap")
        try await withStatusd(.live, configure: BusFault.naming(nodeId)) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await withRunningClient(try TestRedis.configuration, "fault") { redis in
                try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "a1")) { device, _ in
                    #expect(try await BusFault.killBusConnections(of: nodeId, using: redis) > 0)
                    try await remove(app)
                    let kicked = try await device.next(timeout: .seconds(3)) { $0["event"].string == "kicked" }
                    #expect(kicked["reason"].string == reason)
                    try await device.waitClosed(timeout: .seconds(2))
                }
            }
        }
    }

    /// SPEC §9 "nothing is lost": a device of presence scope `all` hears about users with no relationship to it, on
    /// their app's slot channels. A change of such a user made while the node's bus feed is down (alice, on no node,
    /// kicked by her backend while the pub/sub connections reconnect) reaches it once the feed is back: the
    /// resynchronisation re-reads the users the app's log of recent changes names since the feed was last whole. What
    /// it heard before the gap is not told again.
    @Test func aDeviceOfScopeAllHearsAChangeMadeDuringABusGap() async throws {
        let nodeId = BusFault.nodeId("gap-all")
        try await withStatusd(.live, configure: BusFault.naming(nodeId)) { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true])
            try await app.createUsers(["alice", "bob"])
            try await withRunningClient(try TestRedis.configuration, "fault") { redis in
                try await app.withDevice(port: api.client.port!, userId: "bob", DeviceOptions(deviceId: "b1", presence: "all")) { watcher, _ in
                    _ = expectOK(try await app.login("alice", "a1"))
                    let online = try await watcher.nextStatus(of: "alice")
                    #expect(online["statusType"] == "online")
                    #expect(try await BusFault.killBusConnections(of: nodeId, using: redis) > 0)
                    _ = expectOK(try await app.call(.post, "/users/alice/kick", [:]))
                    let told: JSONValue
                    do {
                        told = try await watcher.nextStatus(of: "alice", timeout: .seconds(3))
                    } catch {
                        Issue.record("not told: \(watcher.rawFrames)")
                        throw error
                    }
                    #expect(told["statusType"] == "unlogined", "\(told)")
                    #expect(told["version"].int == (online["version"].int ?? 0) + 1)
                }
            }
        }
    }

    /// The same for a deletion on the shared server (a Redis Cluster in the cluster smoke), the feed killed and not held:
    /// alice, online, deleted at once, and not created again. What the deletion published may be lost with the feed,
    /// and the resynchronisation finds nobody to read; having told the device of alice, the node tells it of her as a
    /// user created again would start (`unlogined`, at the versions the deletion kept, past the last it heard), rather
    /// than leave her shown online; a `roles:` scope too (the deletion kept her role).
    @Test(arguments: ["all", "roles:member"]) func anAppWideDeviceIsToldOfADeletionMadeDuringABusGap(presence: String) async throws {
        let nodeId = BusFault.nodeId("gap-deleted")
        try await withStatusd(.live, configure: BusFault.naming(nodeId)) { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true])
            try await app.createUsers(["alice", "bob"])
            _ = expectOK(try await app.call(.put, "/users/alice", ["role": "member"]))
            try await withRunningClient(try TestRedis.configuration, "fault") { redis in
                try await app.withDevice(port: api.client.port!, userId: "bob", DeviceOptions(deviceId: "b1", presence: presence)) { watcher, _ in
                    _ = expectOK(try await app.login("alice", "a1"))
                    let online = try await watcher.nextStatus(of: "alice")
                    #expect(online["statusType"] == "online")
                    #expect(try await BusFault.killBusConnections(of: nodeId, using: redis) > 0)
                    _ = expectOK(try await app.call(.delete, "/users/alice"), 204)
                    let told = try await watcher.nextStatus(of: "alice", timeout: .seconds(3))
                    #expect(told["statusType"] == "unlogined", "\(told)")
                    #expect((told["version"].int ?? 0) > (online["version"].int ?? 0), "\(told)")
                }
            }
        }
    }

    /// The same with the node's feed held down until the deletion is done (``BusFault/holdingBusDown(of:using:_:)``), on
    /// a server of the test's own, alice not created again (or created again at once), and every relationship.
    /// Everything the deletion published is lost with the feed. Having told the device of alice, the node tells it of
    /// her as the deletion would have (`unlogined`, at the versions the deletion kept, past the last it heard), rather
    /// than leave her shown online:
    /// - to a device of scope `roles:`, from the resynchronisation's read of the user (the deletion kept her role; `all`
    ///   is the test above's);
    /// - to a subscriber and to a friend, whom the deletion took alice from: from what the deletion kept, read for the
    ///   relationships the node held when the feed was lost.
    @Test(arguments: [("roles:member", false), ("subscription", false), ("friend", false), ("subscription", true), ("friend", true)])
    func aDeviceIsToldOfADeletionMadeDuringABusGap(relation: String, createdAgain: Bool) async throws {
        try await withNodeOfItsOwnRedis { api, nodeId, redis in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "friendStatusNotify": true])
            try await app.createUsers(["alice", "bob"])
            _ = expectOK(try await app.call(.put, "/users/alice", ["role": "member"]))
            switch relation {
            case "subscription": _ = expectOK(try await app.subscribe("bob", ["alice"]))
            case "friend": _ = expectOK(try await app.call(.put, "/users/bob/friends", ["userIds": ["alice"]]))
            default: break
            }
            let presence = relation.contains(":") || relation == "all" ? relation : nil
            try await app.withDevice(port: api.client.port!, userId: "bob", DeviceOptions(deviceId: "b1", presence: presence)) { watcher, _ in
                _ = expectOK(try await app.login("alice", "a1"))
                let online = try await watcher.nextStatus(of: "alice")
                #expect(online["statusType"] == "online")
                try await BusFault.holdingBusDown(of: nodeId, using: redis) {
                    _ = expectOK(try await app.call(.delete, "/users/alice"), 204)
                    if createdAgain { try await app.createUsers(["alice"]) }
                }
                let told = try await watcher.nextStatus(of: "alice", timeout: .seconds(5))
                #expect(told["statusType"] == "unlogined", "\(told)")
                #expect((told["version"].int ?? 0) > (online["version"].int ?? 0), "\(told)")
            }
        }
    }

    /// A user created again who connects here while the feed is down keeps their own relationships once the node tells
    /// the deleted user's subscriber: telling of a deletion missed forgets nothing of the user created again.
    @Test func aUserCreatedAgainDuringABusGapKeepsTheirRelationships() async throws {
        try await withNodeOfItsOwnRedis { api, nodeId, redis in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true])
            try await app.createUsers(["alice", "bob", "dave"])
            _ = expectOK(try await app.subscribe("bob", ["alice"]))
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "b1")) { watcher, _ in
                _ = expectOK(try await app.login("alice", "a1"))
                #expect(try await watcher.nextStatus(of: "alice")["statusType"] == "online")
                try await withThrowingTaskGroup(of: Void.self) { group in
                    let device = try await BusFault.holdingBusDown(of: nodeId, using: redis) {
                        _ = expectOK(try await app.call(.delete, "/users/alice"), 204)
                        try await app.createUsers(["alice"])
                        _ = expectOK(try await app.subscribe("alice", ["dave"]))
                        return try await app.openDevice(port: port, userId: "alice", DeviceOptions(deviceId: "a2")) { group.addTask(operation: $0) }.0
                    }
                    #expect(try await watcher.nextStatus(of: "alice", timeout: .seconds(5))["statusType"] == "unlogined")
                    _ = expectOK(try await app.login("dave", "d1"))
                    #expect(try await device.nextStatus(of: "dave")["statusType"] == "online")
                    await device.close()
                    group.cancelAll()
                }
            }
        }
    }

    /// Runs `body` with a live node on a redis-server of the test's own (whose clients ``BusFault/holdingBusDown(of:using:_:)``
    /// may hold), the node's id and a client of that server.
    private func withNodeOfItsOwnRedis(_ body: @Sendable (APIClient, String, RedisClient) async throws -> Void) async throws {
        let nodeId = BusFault.nodeId("gap-held")
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        let configure: (inout ServerConfiguration) -> Void = { configuration in
            server.install(in: &configuration)
            BusFault.naming(nodeId)(&configuration)
        }
        try await withStatusd(.live, configure: configure) { api in
            try await withRunningClient(server.configuration, "fault") { redis in try await body(api, nodeId, redis) }
        }
    }

    @Test func theAuditKeepsWhatIsConnectedAndClosesWhatWasRemoved() {
        let record = DeviceRecord(platform: "web", node: "n1", connection: "c1", kind: .webSocket)
        func reason(_ connection: String, _ record: DeviceRecord?, exists: Bool = true, filed: Bool = false) -> String? {
            DeviceRecordAudit.kickReason(connection: connection, record: record, userExists: exists, mayHaveBeenFiled: filed)
        }
        #expect(reason("c1", record) == nil)
        #expect(reason("c0", record) == "replaced")
        #expect(reason("c1", nil) == "kicked")
        #expect(reason("c1", nil, exists: false) == "deleted")
        #expect(reason("c1", record, exists: false) == "deleted")
        // SPEC §9: while this node's lease may have run out, a vanished record may be the survivors' filing of a node
        // that was only stalled or cut off: no kick, the re-filing of the lost lease puts it back.
        #expect(reason("c1", nil, filed: true) == nil)
        #expect(reason("c0", record, filed: true) == "replaced")
        #expect(reason("c1", nil, exists: false, filed: true) == "deleted")
    }
}
