import Foundation
import Logging
import RedisClient
import StatusCore
import Synchronization

/// This node's lease and the list of devices it holds, so that when a node dies the survivors turn its devices
/// offline (SPEC §9: within 30 seconds).
final class NodeRegistry: Sendable {
    let redis: RedisClient
    let nodeId: String
    let leaseSeconds: Int
    /// The node's wall time, written as its renewals' time and compared with other nodes'.
    let clock: any NodeClock
    /// Whether this node renewed its lease before (its first renewal finds none, and that is no loss).
    private let renewedOnce = Atomic<Bool>(false)
    /// Additions to and removals from the device list, written with a group commit: every connect and every
    /// departure touches the list, and under churn one `SADD`/`SREM` per batch replaces one per device.
    private let listChanges: GroupCommit<ListChange>

    /// A member added to or removed from the device list.
    struct ListChange: Sendable, Equatable {
        var added: Bool
        var member: String
    }

    init(redis: RedisClient, nodeId: String, leaseSeconds: Int, clock: any NodeClock) {
        self.clock = clock
        self.redis = redis
        self.nodeId = nodeId
        self.leaseSeconds = leaseSeconds
        self.listChanges = GroupCommit(maxBatch: 256) { key, changes in
            let replies = try await redis.pipeline(Self.commands(key: key, changes))
            for case .error(let message) in replies { throw RedisClientError(kind: .server, message: message) }
        }
    }

    /// The commands of a batch of list changes, in their order: consecutive additions in one `SADD`, consecutive
    /// removals in one `SREM`.
    static func commands(key: String, _ changes: [ListChange]) -> [[String]] {
        var commands: [[String]] = []
        var run: (added: Bool, members: [String])?
        for change in changes {
            if run?.added != change.added {
                if let run { commands.append([run.added ? "SADD" : "SREM", key] + run.members) }
                run = (change.added, [])
            }
            run?.members.append(change.member)
        }
        if let run { commands.append([run.added ? "SADD" : "SREM", key] + run.members) }
        return commands
    }

    /// List changes written so far in batches (one round trip each).
    var listBatchesWritten: Int { listChanges.batchesWritten }

    /// Every node's last renewal (sorted set, score = epoch ms).
    static let nodes = "st:nodes"

    static func lease(_ nodeId: String) -> String { "st:node:{\(nodeId)}:lease" }
    static func devices(_ nodeId: String) -> String { "st:node:{\(nodeId)}:devices" }
    static func cleanupLock(_ nodeId: String) -> String { "st:node:{\(nodeId)}:cleanup" }

    /// Records that a device session lives on this node.
    func add(_ session: DeviceSession) async throws {
        try await listChanges.commit(ListChange(added: true, member: Self.member(session)), group: Self.devices(nodeId))
    }

    /// Forgets a device session whose departure is filed.
    func remove(_ session: DeviceSession) async throws {
        try await remove(appId: session.appId, userId: session.userId, deviceId: session.deviceId, connection: session.connectionId)
    }

    /// Forgets a device of this node whose departure is filed.
    func remove(appId: String, userId: String, deviceId: String, connection: String) async throws {
        let member = Self.member(appId, userId, deviceId, connection)
        try await listChanges.commit(ListChange(added: false, member: member), group: Self.devices(nodeId))
    }

    /// What a renewal found.
    enum Renewal: Sendable, Equatable {
        /// The lease was still held (or this is the node's first).
        case held
        /// The lease had expired: other nodes may have filed this node's devices gone.
        case lost
    }

    /// Renews this node's lease; says whether it had expired meanwhile.
    func renew() async throws -> Renewal {
        let now = clock.nowMs
        let replies = try await redis.pipeline([
            ["SET", Self.lease(nodeId), String(now), "PX", String(leaseSeconds * 1000), "GET"],
            ["ZADD", Self.nodes, String(now), nodeId],
        ])
        let hadLease = replies.first?.string != nil
        let first = !renewedOnce.exchange(true, ordering: .relaxed)
        return hadLease || first ? .held : .lost
    }

    /// Nodes whose lease has expired, other than this one.
    func deadNodes() async throws -> [String] {
        let cutoff = clock.nowMs - Int64(leaseSeconds) * 1000
        let candidates = try await redis.send("ZRANGEBYSCORE", Self.nodes, "-inf", String(cutoff)).array?.compactMap(\.string) ?? []
        var dead: [String] = []
        for node in candidates where node != nodeId {
            if try await redis.send("EXISTS", Self.lease(node)).int == 0 { dead.append(node) }
        }
        return dead
    }

    /// Takes the right to clean up after `node` (one survivor does it).
    func claimCleanup(of node: String) async throws -> Bool {
        let reply = try await redis.send("SET", Self.cleanupLock(node), nodeId, "NX", "PX", "60000")
        return reply.string == "OK"
    }

    /// The devices a node held: (appId, userId, deviceId, connection).
    func devices(of node: String) async throws -> [(appId: String, userId: String, deviceId: String, connection: String)] {
        let members = try await redis.send("SMEMBERS", Self.devices(node)).array?.compactMap(\.string) ?? []
        return members.compactMap { member in
            let parts = member.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 4 else { return nil }
            return (parts[0], parts[1], parts[2], parts[3])
        }
    }

    /// Forgets a dead node once its devices are filed.
    func forget(_ node: String) async throws {
        _ = try await redis.pipeline([["DEL", Self.devices(node)], ["ZREM", Self.nodes, node], ["DEL", Self.cleanupLock(node)]])
    }

    /// Forgets this node on a clean shutdown.
    func leave() async throws {
        _ = try await redis.pipeline([["DEL", Self.lease(nodeId)], ["ZREM", Self.nodes, nodeId], ["DEL", Self.devices(nodeId)]])
    }

    private static func member(_ session: DeviceSession) -> String {
        member(session.appId, session.userId, session.deviceId, session.connectionId)
    }

    private static func member(_ appId: String, _ userId: String, _ deviceId: String, _ connection: String) -> String {
        [appId, userId, deviceId, connection].joined(separator: "\n")
    }
}
