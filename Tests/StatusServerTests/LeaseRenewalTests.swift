import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.7 "a node's own lease renewal never waits on other work": the lease has a loop of its own, and deletion
/// claims belong to one run, not to a node.
@Suite(.redis, .serialized, .tags(.runsAlone)) struct LeaseRenewalTests {
    @Test func leaseNeverLapsesWhileHousekeepingFilesTheDevicesOfADeadNode() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "lease-test"))
        let nodeId = "busy-" + UUID().uuidString.prefix(8).lowercased()
        let busyNode: (inout ServerConfiguration) -> Void = {
            $0.nodeId = nodeId
            $0.nodeLeaseSeconds = 1
            $0.housekeepingInterval = .milliseconds(100)
        }
        try await withStatusd(configure: busyNode) { api in
            let app = try await api.createApp()
            let lease = NodeStore.lease(nodeId)
            let deadline = ContinuousClock.now + .seconds(5)
            while try await redis.send("EXISTS", lease).int != 1, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            // A node that died holding many devices: filing them keeps the housekeeping busy for longer than a lease.
            let dead = "dead-" + UUID().uuidString.prefix(8).lowercased()
            let devices = NodeStore.devices(dead)
            for start in stride(from: 0, to: 8000, by: 1000) {
                let members = (start..<start + 1000).map { [app.appId, "u\($0)", "d", "c\($0)"].joined(separator: "\n") }
                _ = try await redis.send(["SADD", devices] + members)
            }
            _ = try await redis.send("ZADD", NodeStore.nodes, "0", dead)

            let started = ContinuousClock.now
            var lowest = Int64.max
            var samples = 0
            var filing: Duration?
            while ContinuousClock.now - started < .seconds(90) {
                let ttl = try await redis.send("PTTL", lease).int ?? -2
                lowest = min(lowest, ttl)
                samples += 1
                if filing == nil, try await redis.send("EXISTS", devices).int == 0 { filing = ContinuousClock.now - started }
                if let filing, ContinuousClock.now - started > max(filing, .seconds(2)) { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            let took = try #require(filing, "the dead node's devices were filed")
            print("filed 8,000 devices of a dead node in \(took); lowest lease TTL seen \(lowest) ms over \(samples) samples")
            #expect(lowest > 0, "the lease lapsed while the housekeeping was busy (lowest TTL \(lowest) ms)")
            #expect(took > .seconds(1), "the filing outlasted a lease, so the test shows something")
        }
        await redis.close()
    }

    @Test func aNodesHousekeepingDoesNotJoinTheDeletionItsRequestRuns() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "lease-test"))
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["a", "b"])
            var logger = Logger(label: "lease-test")
            logger.logLevel = .error
            let wiring = try NodeWiring(
                configuration: ServerConfiguration(redis: try TestRedis.configuration, adminKey: "unused"),
                redis: redis,
                logger: logger
            )
            let deletion = wiring.apps.deletion
            let tombstone = RedisKeys(appId: app.appId).deletionTombstone
            try await withThrowingTaskGroup(of: Void.self) { group in
                // The request's run: it holds the claim through the settle time (about a second).
                group.addTask { try await deletion.delete(app.appId) }
                let deadline = ContinuousClock.now + .seconds(5)
                while try await redis.send("EXISTS", tombstone).int != 1, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
                let owner = try #require(try await redis.send("HGET", tombstone, "owner").string)
                // The same node's housekeeping, meanwhile: the claim is busy, so it leaves the deletion to its run.
                let started = ContinuousClock.now
                try await deletion.finishUnfinished()
                #expect(ContinuousClock.now - started < .milliseconds(500), "housekeeping ran the deletion a second time")
                #expect(try await redis.send("HGET", tombstone, "owner").string == owner)
                try await group.waitForAll()
            }
            #expect(try await redis.send("EXISTS", tombstone).int == 0, "the request's run finished the deletion")
            #expect(try await api.admin(.get, "/v1/apps/\(app.appId)").status == 404)
        }
        await redis.close()
    }
}
