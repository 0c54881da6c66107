import Foundation
import StatusCore
import Synchronization

/// This node's lease and the list of devices it holds, so that when a node dies the survivors turn its devices
/// offline (SPEC §9: within 30 seconds). The keys are written through ``NodeStore``.
final class NodeRegistry: Sendable {
    let store: NodeStore
    let nodeId: String
    let leaseSeconds: Int
    /// Whether this node renewed its lease before (its first renewal finds none, and that is no loss).
    private let renewedOnce = Atomic<Bool>(false)
    /// Additions to the device list, written with a group commit: every connect touches the list, and under churn one
    /// `SADD` per batch replaces one per device. A connect waits for its addition (it must land before the device is
    /// online), so an addition that leads a batch never lingers.
    private let listAdditions: GroupCommit<NodeStore.ListChange>
    /// Removals from the device list, a group commit of their own that lingers longer (``GroupCommitLinger/removals``):
    /// a removal comes after the departure is filed, and nobody waits on it but the session's own clean-up, while an
    /// addition joining a lingering batch would hold up its connect's welcome.
    private let listRemovals: GroupCommit<NodeStore.ListChange>

    /// The node's wall time, written as its renewals' time and compared with other nodes'.
    let clock: any NodeClock

    init(store: NodeStore, nodeId: String, leaseSeconds: Int, clock: any NodeClock) {
        self.clock = clock
        self.store = store
        self.nodeId = nodeId
        self.leaseSeconds = leaseSeconds
        let write: GroupCommit<NodeStore.ListChange>.Write = { key, changes in try await store.write(changes, to: key) }
        self.listAdditions = GroupCommit(maxBatch: 256, write: write)
        self.listRemovals = GroupCommit(maxBatch: 256, linger: .removals, write: write)
    }

    /// List changes written so far in batches (one round trip each).
    var listBatchesWritten: Int { listAdditions.batchesWritten + listRemovals.batchesWritten }

    /// The shortest lease a node may be configured with (`--lease-seconds` is at least 2).
    static let shortestLeaseMs: Int64 = 2000

    /// How often the lease is renewed: three times per lease.
    var renewalPeriod: Duration { .milliseconds(leaseSeconds * 1000 / 3) }

    /// A session's entry in the node's device list.
    struct Listing: Sendable {
        var key: String
        var member: String
    }

    /// The entry of `session`, for a connect that writes it in its own step (a single server, ``DeviceConnect/Alongside``).
    func listing(of session: DeviceSession) -> Listing {
        Listing(key: NodeStore.devices(nodeId), member: Self.member(session))
    }

    /// Records that a device session lives on this node.
    func add(_ session: DeviceSession) async throws {
        // The connect waits for it: a leading addition writes at once, without lingering for company.
        try await listAdditions.commit(
            NodeStore.ListChange(added: true, member: Self.member(session)),
            group: NodeStore.devices(nodeId),
            mayLinger: false
        )
    }

    /// Forgets a device session whose departure is filed.
    func remove(_ session: DeviceSession) async throws {
        try await remove(appId: session.appId, userId: session.userId, deviceId: session.deviceId, connection: session.connectionId)
    }

    /// Forgets a device of this node whose departure is filed.
    func remove(appId: String, userId: String, deviceId: String, connection: String) async throws {
        let member = NodeStore.member(appId, userId, deviceId, connection)
        try await listRemovals.commit(NodeStore.ListChange(added: false, member: member), group: NodeStore.devices(nodeId))
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
        let hadLease = try await store.renew(nodeId, nowMs: clock.nowMs, leaseMs: Int64(leaseSeconds) * 1000)
        let first = !renewedOnce.exchange(true, ordering: .relaxed)
        return hadLease || first ? .held : .lost
    }

    /// Measures every master's clock for the write fence (``NodeStore/readClocks()``); returns how many answered.
    func readClocks() async throws -> Int {
        try await store.readClocks()
    }

    /// Nodes whose lease has expired, other than this one. Each node renews for a lease of its own length, and its
    /// lease key runs out in Redis after that length: a node not renewed for the shortest lease a node can have is a
    /// candidate, and its missing lease key says it is dead. (Judging other nodes by this node's own lease would leave
    /// a dead node with a shorter lease online for this node's whole lease.)
    func deadNodes() async throws -> [String] {
        let candidates = try await store.renewedBefore(clock.nowMs - Self.shortestLeaseMs)
        var dead: [String] = []
        for node in candidates where node != nodeId {
            if try await !store.holdsLease(node) { dead.append(node) }
        }
        return dead
    }

    /// Takes the right to clean up after `node` (one survivor does it).
    func claimCleanup(of node: String) async throws -> Bool {
        try await store.claimCleanup(of: node, by: nodeId)
    }

    /// The devices a node held: (appId, userId, deviceId, connection).
    func devices(of node: String) async throws -> [NodeStore.Device] {
        try await store.devices(of: node)
    }

    /// Forgets a dead node once its devices are filed.
    func forget(_ node: String) async throws {
        try await store.forget(node)
    }

    /// Forgets this node on a clean shutdown.
    func leave() async throws {
        try await store.leave(nodeId)
    }

    private static func member(_ session: DeviceSession) -> String {
        NodeStore.member(session.appId, session.userId, session.deviceId, session.connectionId)
    }
}
