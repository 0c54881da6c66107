import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// On a single server a WebSocket connect is one script call: `device_connect.lua` writes the node's device list entry
/// (SPEC §9) and the app's online index (SPEC §4, §10.6 roles, §7 recent changes) in the connect's own step
/// (``DeviceConnect/Alongside``), and a departure writes the index in its own step too (``DevicesRemove/Alongside``). Against a real Redis; on a cluster the keys are in other slots and the node writes
/// them apart, as the last test checks.
@Suite(.redis) struct ConnectAlongsideTests {
    private static func wiring() throws -> (RedisClient, NodeWiring) {
        var logger = Logger(label: "connect-alongside-test")
        logger.logLevel = .warning
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: logger)
        let configuration = ServerConfiguration(redis: try TestRedis.configuration, adminKey: "unused-admin-key-0123456789")
        return (redis, try NodeWiring(configuration: configuration, redis: redis, logger: logger))
    }

    /// Runs `body` with a client and a node's wiring on the test Redis when it is a single server; a cluster run of the
    /// suite checks the other side instead (``aClusterIsNotASingleServer()``).
    private static func onASingleServer(_ body: @Sendable (RedisClient, NodeWiring) async throws -> Void) async throws {
        let (redis, wiring) = try Self.wiring()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await redis.run() }
            if await wiring.statuses.isSingleServer() { try await body(redis, wiring) }
            group.cancelAll()
        }
    }

    private static func connect(
        _ wiring: NodeWiring,
        _ app: APIClient,
        _ userId: String,
        _ deviceId: String,
        alongside: DeviceConnect.Alongside?
    ) async throws -> StatusRepository.ConnectResult {
        try await wiring.statuses.connect(
            appId: app.appId,
            userId: userId,
            deviceId: deviceId,
            record: DeviceRecord(platform: "ios", node: "n1", connection: "c-\(deviceId)", kind: .webSocket),
            rules: .init(maxDevices: 10, policy: .multi, platform: .ios),
            alongside: alongside
        )
    }

    private static func alongside(_ app: APIClient, member: String) -> DeviceConnect.Alongside {
        DeviceConnect.Alongside(
            nodeDevices: NodeStore.devices("alongside-\(app.appId)"),
            member: member,
            app: RedisKeys(appId: app.appId),
            keepMs: 60_000
        )
    }

    @Test func aConnectWritesTheNodeListAndTheOnlineIndexInItsOwnStep() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            expectOK(try await app.call(.put, "/users/alice", ["role": "crew"]))
            try await Self.onASingleServer { (redis: RedisClient, wiring: NodeWiring) async throws in
                let keys = RedisKeys(appId: app.appId)
                let first = try await Self.connect(wiring, app, "alice", "phone", alongside: Self.alongside(app, member: "m-phone"))
                #expect(first.write.change == .status)
                let version = first.write.reply.status.version
                #expect(try await redis.send("SISMEMBER", NodeStore.devices("alongside-\(app.appId)"), "m-phone").int == 1)
                #expect(try await redis.send("ZSCORE", keys.online, "alice").string != nil)
                #expect(try await redis.send("ZSCORE", keys.onlineRolePrefix + "crew", "alice").string != nil)
                #expect(try await redis.send("HGET", keys.onlineRoles, "alice").string == "crew")
                #expect(try await redis.send("HGET", keys.onlineVersions, "alice").string == String(version))
                #expect(try await redis.send("ZSCORE", keys.recentChanges, "alice").string != nil)
                #expect(try await redis.send("PTTL", keys.recentChanges).int ?? 0 > 0)
                // A second device changes the devices only: listed too, the index as it was.
                let second = try await Self.connect(wiring, app, "alice", "tablet", alongside: Self.alongside(app, member: "m-tablet"))
                #expect(second.write.change == .devices)
                #expect(try await redis.send("SISMEMBER", NodeStore.devices("alongside-\(app.appId)"), "m-tablet").int == 1)
                #expect(try await redis.send("HGET", keys.onlineVersions, "alice").string == String(version))
                // The node's own writer never ran for these connects.
                #expect(wiring.recorder.onlineIndex.batchesWritten == 0)
                // And the app's listing shows her, as any node's would.
                let online = try await app.call(.get, "/users?status=online")
                #expect(online.body["users"].array.contains { $0["userId"] == "alice" } == true, "\(online.body)")
                _ = try await redis.send("DEL", NodeStore.devices("alongside-\(app.appId)"))
            }
        }
    }

    /// A departure on a single server writes the app's online index in its own step too (``DevicesRemove/Alongside``)
    /// when it takes the user out of `online`; one that leaves a device changes the devices only and leaves it alone.
    @Test func aDepartureWritesTheOnlineIndexInItsOwnStep() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["dave"])
            expectOK(try await app.call(.put, "/users/dave", ["role": "crew"]))
            try await Self.onASingleServer { (redis: RedisClient, wiring: NodeWiring) async throws in
                let keys = RedisKeys(appId: app.appId)
                _ = try await Self.connect(wiring, app, "dave", "phone", alongside: Self.alongside(app, member: "m-phone"))
                let tablet = try await Self.connect(wiring, app, "dave", "tablet", alongside: Self.alongside(app, member: "m-tablet"))
                let index = DevicesRemove.Alongside(app: keys, keepMs: 60_000)
                func remove(_ deviceId: String) async throws -> StatusRepository.RemoveResult {
                    try await wiring.statuses.remove(
                        appId: app.appId,
                        userId: "dave",
                        deviceIds: [deviceId],
                        leavingAs: .offline,
                        retentionSeconds: 60,
                        alongside: index
                    )
                }
                let first = try await remove("tablet")
                #expect(first.change == .devices)
                #expect(try await redis.send("ZSCORE", keys.online, "dave").string != nil)
                #expect(try await redis.send("HGET", keys.onlineVersions, "dave").string == String(tablet.write.reply.status.version))
                let last = try await remove("phone")
                #expect(last.change == .status)
                #expect(last.reply.status.statusType == .offline)
                #expect(try await redis.send("ZSCORE", keys.online, "dave").string == nil)
                #expect(try await redis.send("ZSCORE", keys.onlineRolePrefix + "crew", "dave").string == nil)
                #expect(try await redis.send("HGET", keys.onlineVersions, "dave").string == String(last.reply.status.version))
                #expect(try await redis.send("ZSCORE", keys.recentChanges, "dave").string != nil)
                // The node's own writer never ran for these departures.
                #expect(wiring.recorder.onlineIndex.batchesWritten == 0)
                let offline = try await app.call(.get, "/users?status=offline")
                #expect(offline.body["users"].array.contains { $0["userId"] == "dave" } == true, "\(offline.body)")
                _ = try await redis.send("DEL", NodeStore.devices("alongside-\(app.appId)"))
            }
        }
    }

    /// The index is applied in version order in the connect too: an update of a newer version, written first by
    /// another node, is not undone.
    @Test func aConnectNeverUndoesANewerIndexUpdate() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["bob"])
            try await Self.onASingleServer { (redis: RedisClient, wiring: NodeWiring) async throws in
                let keys = RedisKeys(appId: app.appId)
                _ = try await wiring.statuses.index(appId: app.appId, updates: [.init(userId: "bob", version: 1000, online: false)], keepMs: 60_000)
                let connected = try await Self.connect(wiring, app, "bob", "phone", alongside: Self.alongside(app, member: "m-bob"))
                #expect(connected.write.change == .status)
                #expect(connected.write.reply.status.version < 1000)
                #expect(try await redis.send("ZSCORE", keys.online, "bob").string == nil)
                #expect(try await redis.send("HGET", keys.onlineVersions, "bob").string == "1000")
                #expect(try await redis.send("SISMEMBER", NodeStore.devices("alongside-\(app.appId)"), "m-bob").int == 1)
                _ = try await redis.send("DEL", NodeStore.devices("alongside-\(app.appId)"))
            }
        }
    }

    /// A refused connect (its token generation is not the user's) writes neither the list nor the index.
    @Test func aRefusedConnectListsNothing() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["carol"])
            try await Self.onASingleServer { (redis: RedisClient, wiring: NodeWiring) async throws in
                let keys = RedisKeys(appId: app.appId)
                await #expect(throws: (any Error).self) {
                    try await wiring.statuses.connect(
                        appId: app.appId,
                        userId: "carol",
                        deviceId: "phone",
                        record: DeviceRecord(platform: "ios", node: "n1", connection: "c-phone", kind: .webSocket),
                        rules: .init(maxDevices: 10, policy: .multi, platform: .ios),
                        generation: "not-carols",
                        alongside: Self.alongside(app, member: "m-carol")
                    )
                }
                #expect(try await redis.send("EXISTS", NodeStore.devices("alongside-\(app.appId)")).int == 0)
                #expect(try await redis.send("ZSCORE", keys.online, "carol").string == nil)
                #expect(try await redis.send("ZSCORE", keys.recentChanges, "carol").string == nil)
            }
        }
    }

    /// On a cluster the node's list and the app's index are in other hash slots than the user's keys: the node does not
    /// write them in the connect's step. (On a single server, the tests above ran.)
    @Test func aClusterIsNotASingleServer() async throws {
        let (redis, wiring) = try Self.wiring()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await redis.run() }
            let cluster = try await redis.isCluster()
            #expect(await wiring.statuses.isSingleServer() == !cluster)
            group.cancelAll()
        }
    }
}
