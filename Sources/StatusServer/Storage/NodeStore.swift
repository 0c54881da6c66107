import RedisClient

/// The keys of the node registry (``NodeRegistry``): every node's last renewal, each node's lease, the list of devices
/// it holds and the lock of the survivor that cleans up after it. Node keys carry the hash tag `{nodeId}`.
struct NodeStore: Sendable {
    let redis: RedisClient
    /// Measured against each master's clock by ``readClocks()``.
    let fence: WriteFence

    /// Every node's last renewal (sorted set, score = epoch ms).
    static let nodes = "st:nodes"

    static func lease(_ nodeId: String) -> String { "st:node:{\(nodeId)}:lease" }
    static func devices(_ nodeId: String) -> String { "st:node:{\(nodeId)}:devices" }
    static func cleanupLock(_ nodeId: String) -> String { "st:node:{\(nodeId)}:cleanup" }

    /// A device of a node's list.
    typealias Device = (appId: String, userId: String, deviceId: String, connection: String)

    /// A member added to or removed from a device list.
    struct ListChange: Sendable, Equatable {
        var added: Bool
        var member: String
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

    /// Writes a batch of changes to the device list `key` in one round trip; an error reply to any command throws.
    func write(_ changes: [ListChange], to key: String) async throws {
        let replies = try await redis.pipeline(Self.commands(key: key, changes))
        for case .error(let message) in replies { throw RedisClientError(kind: .server, message: message) }
    }

    /// Renews the node's lease at `nowMs` for `leaseMs` and records the renewal; says whether the lease was still held.
    func renew(_ nodeId: String, nowMs: Int64, leaseMs: Int64) async throws -> Bool {
        let replies = try await redis.pipeline([
            ["SET", Self.lease(nodeId), String(nowMs), "PX", String(leaseMs), "GET"],
            ["ZADD", Self.nodes, String(nowMs), nodeId],
        ])
        return replies.first?.string != nil
    }

    /// Reads the clock of every master (`TIME`, all at once, one round trip each) for the ``WriteFence``: a script call
    /// is fenced on the clock of the server that runs it, and the masters of a cluster need not agree. A master that
    /// does not answer keeps its last measure and does not hold up the others. A reading whose round trip was long is
    /// taken again at once, up to ``clockReadings`` times, and the fence keeps the most precise
    /// (``RedisClockEstimate/updated(with:)``). Returns how many masters were measured.
    func readClocks() async throws -> Int {
        let servers = try await redis.masterEndpoints()
        return await withTaskGroup(of: Bool.self) { group in
            for server in servers {
                group.addTask {
                    var measured = false
                    for _ in 0..<Self.clockReadings {
                        let sent = ContinuousClock.now
                        guard let time = try? await redis.send(["TIME"], to: server).array, time.count == 2,
                            let seconds = time[0].string.flatMap({ Int64($0) }), let micros = time[1].string.flatMap({ Int64($0) })
                        else { break }
                        measured = true
                        if fence.observe(server: server, redisMs: seconds * 1000 + micros / 1000, sent: sent, received: .now) { break }
                    }
                    return measured
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }

    /// How many `TIME` round trips one clock reading of a master may take while they come back imprecise.
    static let clockReadings = 3

    /// Nodes whose last renewal is at or before `cutoff` (epoch ms).
    func renewedBefore(_ cutoff: Int64) async throws -> [String] {
        try await redis.send("ZRANGEBYSCORE", Self.nodes, "-inf", String(cutoff)).array?.compactMap(\.string) ?? []
    }

    /// Whether the node's lease still exists.
    func holdsLease(_ nodeId: String) async throws -> Bool {
        try await redis.send("EXISTS", Self.lease(nodeId)).int != 0
    }

    /// Takes the right to clean up after `node` for `by` (one survivor does it).
    func claimCleanup(of node: String, by nodeId: String) async throws -> Bool {
        try await redis.send("SET", Self.cleanupLock(node), nodeId, "NX", "PX", "60000").string == "OK"
    }

    /// The devices a node held; a member that does not parse is skipped.
    func devices(of node: String) async throws -> [Device] {
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

    /// Forgets a node leaving cleanly.
    func leave(_ nodeId: String) async throws {
        _ = try await redis.pipeline([["DEL", Self.lease(nodeId)], ["ZREM", Self.nodes, nodeId], ["DEL", Self.devices(nodeId)]])
    }

    /// A device as a node's list holds it.
    static func member(_ appId: String, _ userId: String, _ deviceId: String, _ connection: String) -> String {
        [appId, userId, deviceId, connection].joined(separator: "\n")
    }
}
