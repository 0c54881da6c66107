import Foundation
import RedisTestSupport
import Testing

@testable import RedisClient

/// The client against a real Redis Cluster of three masters on loopback (started by each test): routing by slot,
/// scripts on every master, `MOVED` after a slot moved, `ASK` during a migration, a live resharding under load, and a
/// master failover. Every value written is read back: a redirection may cost a retry, never a wrong answer.
@Suite("RedisClient against a Redis Cluster", .serialized, .timeLimit(.minutes(2)))
struct RedisClusterTests {
    /// Keys spread over many slots (and so over every master).
    static let keys = (0..<300).map { "test:{k\($0)}:value" }

    @Test func commandsAndPipelinesGoToTheMasterOfTheirSlot() async throws {
        try await withTestCluster { cluster in
            try await withTestClient(url: cluster.url) { client in
                #expect(try await client.isCluster())
                #expect(try await client.masterEndpoints().count == 3)
                for (index, key) in Self.keys.enumerated() {
                    _ = try await client.send("SET", key, "v\(index)")
                }
                // Each key is stored on the master that serves its slot (asked of that node alone, not redirected).
                let owners = try cluster.slotOwners()
                for key in Self.keys.prefix(30) {
                    let port = try #require(owners[RedisKeySlot.of(key)])
                    #expect(try cluster.cli(["-p", "\(port)", "GET", key]).trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("v"))
                }
                // A pipeline spanning every master comes back in the order it was sent.
                let replies = try await client.pipeline(Self.keys.map { ["GET", $0] } + [["INCR", Self.keys[0]]])
                #expect(replies.dropLast().map(\.string) == Self.keys.indices.map { "v\($0)" })
                guard case .error(let message) = replies.last else {
                    Issue.record("INCR of a non-number should fail in place")
                    return
                }
                #expect(message.hasPrefix("ERR"))
                // Keyless commands go to any master, or to the one named; SCAN sees the keys of all of them.
                #expect(try await client.send("PING") == .simpleString("PONG"))
                for endpoint in try await client.masterEndpoints() {
                    guard case .tcp(_, let port) = endpoint else { continue }
                    let info = try await client.send(["INFO", "server"], to: endpoint).string ?? ""
                    #expect(info.contains("tcp_port:\(port)\r\n"), "INFO of \(port)")
                }
                var scanned = Set<String>()
                try await client.scanKeys(matching: "test:{k*") { scanned.formUnion($0) }
                #expect(scanned == Set(Self.keys))
            }
        }
    }

    @Test func scriptsAreLoadedOnEveryMasterAndReloadedWhenFlushedAndNoneRunsAcrossSlots() async throws {
        try await withTestCluster { cluster in
            try await withTestClient(url: cluster.url) { client in
                let script = RedisScript(name: "setget", source: "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])")
                try await client.loadScripts([script])
                for key in Self.keys.prefix(50) {
                    #expect(try await client.evalScript(script, keys: [key], arguments: ["x"]).string == "x")
                }
                // A master that lost its scripts (restart, SCRIPT FLUSH) gets them again on NOSCRIPT.
                for node in cluster.nodes {
                    try cluster.cli(["-p", "\(node.port)", "SCRIPT", "FLUSH"])
                }
                for key in Self.keys.prefix(50) {
                    #expect(try await client.evalScript(script, keys: [key], arguments: ["y"]).string == "y")
                }
                // A script across hash slots is refused on a cluster before anything is sent: no key is written.
                let across = ["test:{a}across", "test:{b}across"]
                let error = try await #require(throws: RedisClientError.self) {
                    try await client.evalScript(setBothKeysScript, keys: across, arguments: ["v"], acrossSlots: true)
                }
                #expect(error.kind == .protocolError)
                let written = [try await client.send("EXISTS", across[0]).int, try await client.send("EXISTS", across[1]).int]
                #expect(written == [0, 0])
            }
        }
    }

    @Test func aMovedSlotIsFollowedAndRemembered() async throws {
        try await withTestCluster { cluster in
            try await withTestClient(url: cluster.url) { client in
                let key = Self.keys[7]
                let slot = RedisKeySlot.of(key)
                _ = try await client.send("SET", key, "before")
                let from = try cluster.masterPort(ofSlot: slot)
                let to = cluster.nodes.map(\.port).first { $0 != from }!
                try cluster.migrate(slot: slot, from: from, to: to)
                // The client still believes the old owner: it gets MOVED, follows it, and remembers the new owner.
                #expect(try await client.send("GET", key).string == "before")
                _ = try await client.send("SET", key, "after")
                #expect(try cluster.cli(["-p", "\(to)", "GET", key]).hasPrefix("after"))
                #expect(try await client.endpoint(ofSlot: slot) == .tcp(host: "127.0.0.1", port: to))
            }
        }
    }

    /// Writes `moved` and `stays` (one slot), starts moving their slot to another master and moves `moved` only, so
    /// that the slot's keys are split between the two: returns the slot, both masters' ports and the new one's id.
    private static func splitMigration(
        _ cluster: RedisTestCluster,
        _ client: RedisClient,
        moved: String,
        stays: String
    ) async throws -> (slot: Int, from: Int, to: Int, toId: String) {
        let slot = RedisKeySlot.of(moved)
        _ = try await client.pipeline([["SET", moved, "m"], ["SET", stays, "s"]])
        let from = try cluster.masterPort(ofSlot: slot)
        let to = cluster.nodes.map(\.port).first { $0 != from }!
        let fromId = try cluster.nodeId(port: from)
        let toId = try cluster.nodeId(port: to)
        try cluster.cli(["-p", "\(to)", "CLUSTER", "SETSLOT", "\(slot)", "IMPORTING", fromId])
        try cluster.cli(["-p", "\(from)", "CLUSTER", "SETSLOT", "\(slot)", "MIGRATING", toId])
        try cluster.cli(["-p", "\(from)", "MIGRATE", "127.0.0.1", "\(to)", "", "0", "5000", "KEYS", moved])
        return (slot, from, to, toId)
    }

    @Test func anAskDuringAMigrationIsFollowedWithAsking() async throws {
        try await withTestCluster { cluster in
            try await withTestClient(url: cluster.url) { client in
                let moved = "test:{ask}:moved"
                let stays = "test:{ask}:stays"
                let (slot, from, to, _) = try await Self.splitMigration(cluster, client, moved: moved, stays: stays)
                // The migrated key answers through ASK + ASKING; the one still at home answers directly; a new key of
                // the slot is created on the importing node.
                #expect(try await client.send("GET", moved).string == "m")
                #expect(try await client.send("GET", stays).string == "s")
                _ = try await client.send("SET", "test:{ask}:new", "n")
                #expect(try cluster.cli(["-p", "\(to)", "ASKING"]).contains("OK"))
                #expect(try await client.endpoint(ofSlot: slot) == .tcp(host: "127.0.0.1", port: from))
            }
        }
    }

    /// A multi-key command whose keys a migration splits between two masters is answered `TRYAGAIN`; a slot that
    /// takes longer than a second to move is no outage: the command is retried for as long as the command timeout
    /// (1.5 s), and answered once the slot has moved.
    @Test func aSlotThatTakesOverASecondToMoveIsNoOutage() async throws {
        try await withTestCluster { cluster in
            try await withTestClient(url: cluster.url) { client in
                let moved = "test:{slow}:moved"
                let stays = "test:{slow}:stays"
                let (slot, from, to, toId) = try await Self.splitMigration(cluster, client, moved: moved, stays: stays)
                let started = ContinuousClock.now
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        // The keys are split for 1.2 s: TRYAGAIN until the slot has moved.
                        try await Task.sleep(for: .milliseconds(1_200))
                        try cluster.cli(["-p", "\(from)", "MIGRATE", "127.0.0.1", "\(to)", "", "0", "5000", "KEYS", stays])
                        for node in cluster.nodes where node.isRunning {
                            try cluster.cli(["-p", "\(node.port)", "CLUSTER", "SETSLOT", "\(slot)", "NODE", toId])
                        }
                    }
                    let values = try await client.send("MGET", moved, stays).array?.compactMap(\.string)
                    #expect(values == ["m", "s"])
                    #expect(ContinuousClock.now - started >= .milliseconds(1_200))
                    try await group.waitForAll()
                }
            }
        }
    }

    @Test func aLiveReshardingLosesNoWrite() async throws {
        try await withTestCluster { cluster in
            try await withTestClient(url: cluster.url) { client in
                let counters = (0..<64).map { "test:{c\($0)}:n" }
                let from = try cluster.nodeId(port: cluster.nodes[0].port)
                let to = try cluster.nodeId(port: cluster.nodes[1].port)
                let done = TestBox(false)
                let acknowledged = TestBox([Int](repeating: 0, count: counters.count))
                let failures = TestBox(0)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<4 {
                        group.addTask {
                            var round = 0
                            while !done.withLock({ $0 }) || round < 20 {
                                let index = (worker * 16 + round) % counters.count
                                round += 1
                                do {
                                    _ = try await client.send("INCR", counters[index])
                                    acknowledged.withLock { $0[index] += 1 }
                                } catch {
                                    failures.withLock { $0 += 1 }
                                }
                            }
                        }
                    }
                    group.addTask {
                        defer { done.withLock { $0 = true } }
                        try cluster.cli([
                            "--cluster", "reshard", "127.0.0.1:\(cluster.nodes[0].port)", "--cluster-from", from, "--cluster-to", to,
                            "--cluster-slots", "1500", "--cluster-yes", "--cluster-pipeline", "10",
                        ])
                    }
                    try await group.waitForAll()
                }
                // Every acknowledged increment is there, exactly once; none failed (a redirection is not a failure).
                let stored = try await client.pipeline(counters.map { ["GET", $0] }).map { Int($0.string ?? "0") ?? 0 }
                #expect(stored == acknowledged.withLock { $0 })
                #expect(failures.withLock { $0 } == 0)
                #expect(stored.reduce(0, +) > 0)
            }
        }
    }

    @Test func aMasterFailoverCostsOnlyUnavailableCalls() async throws {
        try await withTestCluster(masters: 3, replicas: 1) { cluster in
            try await withTestClient(url: cluster.url) { client in
                // Keys whose slots the first master serves: it has the replica that will take over.
                let owners = try cluster.slotOwners()
                let owned = Self.keys.filter { owners[RedisKeySlot.of($0)] == cluster.nodes[0].port }
                #expect(!owned.isEmpty)
                for key in owned {
                    _ = try await client.send("SET", key, "kept")
                }
                // Make sure the replica has them before the master dies (replication is asynchronous). `WAIT` from
                // another connection would not do: it waits only for that connection's own writes.
                try await cluster.waitUntilReplicated(masterPort: cluster.nodes[0].port)
                let killedAt = ContinuousClock.now
                await cluster.kill(0)
                var unavailable = 0
                let recovered = await eventually(within: .seconds(20)) {
                    do {
                        return try await client.send("GET", owned[0]).string == "kept"
                    } catch let error as RedisClientError {
                        #expect(error.isConnectionProblem, "unexpected error: \(error)")
                        unavailable += 1
                        return false
                    } catch {
                        Issue.record("unexpected error: \(error)")
                        return false
                    }
                }
                #expect(recovered, "cluster after the failover:\n\(cluster.diagnostics())")
                #expect(unavailable > 0)
                print("failover: served again \(ContinuousClock.now - killedAt) after the kill, \(unavailable) calls unavailable")
                for key in owned {
                    #expect(try await client.send("GET", key).string == "kept")
                }
                _ = try await client.send("SET", owned[0], "after")
                #expect(try await client.send("GET", owned[0]).string == "after")
            }
        }
    }
}
