import Foundation
import Logging
import NIOEmbedded
import RedisClient
import Testing

@testable import StatusServer

/// The node's device list (``NodeRegistry``), written with a group commit: a batch keeps its changes' order, concurrent
/// connects and departures share round trips, and every caller returns once its own change is in Redis (the node's
/// reconciliation and the survivors' cleanup read this list, so a device must be listed before it is connected).
@Suite(.redis) struct NodeDeviceListTests {
    private typealias Change = NodeStore.ListChange

    @Test func aBatchIsOneCommandPerRunOfAdditionsOrRemovalsInOrder() {
        let changes = [
            Change(added: true, member: "a"), Change(added: true, member: "b"), Change(added: false, member: "c"),
            Change(added: true, member: "d"), Change(added: false, member: "e"), Change(added: false, member: "f"),
        ]
        #expect(
            NodeStore.commands(key: "k", changes) == [
                ["SADD", "k", "a", "b"], ["SREM", "k", "c"], ["SADD", "k", "d"], ["SREM", "k", "e", "f"],
            ]
        )
        #expect(NodeStore.commands(key: "k", []) == [])
    }

    @Test func concurrentConnectsAndDeparturesShareRoundTripsAndAreListedWhenTheyReturn() async throws {
        var logger = Logger(label: "node-list-test")
        logger.logLevel = .warning
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: logger)
        let nodeId = "nl-" + UUID().uuidString.prefix(8).lowercased()
        let registry = NodeRegistry(store: NodeStore(redis: redis, fence: .open), nodeId: nodeId, leaseSeconds: 10, clock: SystemNodeClock())
        let loop = EmbeddedEventLoop()
        let sessions = (0..<200).map {
            DeviceSession(
                appId: "app",
                userId: "u\($0)",
                deviceId: "d",
                platform: .web,
                scope: .subscriptions,
                eventLoop: loop,
                clock: SystemNodeClock()
            )
        }
        let key = NodeStore.devices(nodeId)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (position, session) in sessions.enumerated() {
                group.addTask {
                    try await registry.add(session)
                    let member = [session.appId, session.userId, session.deviceId, session.connectionId].joined(separator: "\n")
                    #expect(try await redis.send("SISMEMBER", key, member).int == 1)
                    // Every other device leaves again at once.
                    if position % 2 == 0 {
                        try await registry.remove(session)
                        #expect(try await redis.send("SISMEMBER", key, member).int == 0)
                    }
                }
            }
            try await group.waitForAll()
        }
        let listed = try await registry.devices(of: nodeId)
        #expect(listed.count == 100)
        #expect(Set(listed.map(\.userId)) == Set(sessions.enumerated().filter { $0.offset % 2 == 1 }.map(\.element.userId)))
        #expect(registry.listBatchesWritten < 300, "300 list changes took \(registry.listBatchesWritten) round trips")
        _ = try await redis.send("DEL", key)
        await redis.close()
    }
}
