import Foundation
import Logging
import RedisClient
import Testing

@testable import StatusServer

/// SPEC §9: a node that dies has its devices turned offline by the others within 30 seconds. Nodes may run with leases
/// of different lengths (during a rolling change of `--lease-seconds`, say): a survivor finds a node dead once that
/// node's own lease has run out in Redis, not after the survivor's lease.
@Suite(.redis) struct DeadNodeDetectionTests {
    private func registry(_ redis: RedisClient, _ nodeId: String, leaseSeconds: Int, clock: any NodeClock) -> NodeRegistry {
        NodeRegistry(store: NodeStore(redis: redis, fence: .open), nodeId: nodeId, leaseSeconds: leaseSeconds, clock: clock)
    }

    @Test func aNodeWithAShorterLeaseIsDeadOnceItsOwnLeaseRunsOut() async throws {
        var logger = Logger(label: "dead-node-test")
        logger.logLevel = .warning
        // A Redis of its own: the nodes of other tests running meanwhile clean up after any dead node in the shared
        // one, and may forget the short node before the survivor here is asked.
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        let redis = RedisClient(configuration: server.configuration, logger: logger)
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let survivorClock = ManualNodeClock()
        let survivor = registry(redis, "survivor-\(suffix)", leaseSeconds: 15, clock: survivorClock)
        let short = registry(redis, "short-\(suffix)", leaseSeconds: 2, clock: SystemNodeClock())
        let long = registry(redis, "long-\(suffix)", leaseSeconds: 15, clock: SystemNodeClock())
        try await closing(redis) {
            #expect(try await survivor.renew() == .held)
            #expect(try await short.renew() == .held)
            #expect(try await long.renew() == .held)
            // The short node stops renewing; its lease key runs out in Redis 2 s later.
            let deadline = ContinuousClock.now + .seconds(10)
            while try await redis.send("EXISTS", NodeStore.lease(short.nodeId)).int != 0 {
                guard ContinuousClock.now < deadline else { throw TestAppError(message: "the short lease never ran out") }
                try await Task.sleep(for: .milliseconds(50))
            }
            // The survivor's clock 3 s past the real time: both others renewed before its shortest-lease cutoff, only
            // the short one lost its key. (Counted from now, not from when the clock was made: on a busy machine the
            // renewals above can take longer than a second, and the short node's renewal would be after the cutoff.)
            survivorClock.advance(by: .seconds(max(0, Date().timeIntervalSince(survivorClock.wallNow))) + .seconds(3))
            let dead = try await survivor.deadNodes()
            #expect(dead.contains(short.nodeId))
            #expect(!dead.contains(long.nodeId))
            #expect(!dead.contains(survivor.nodeId))
            for node in [survivor, short, long] { try await node.leave() }
        }
    }
}
