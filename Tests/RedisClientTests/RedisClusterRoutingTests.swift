import Testing

@testable import RedisClient

/// The pure parts of cluster support: key slots, redirection replies, the slot map, and which key routes a command.
@Suite struct RedisClusterRoutingTests {
    @Test func keySlotsMatchRedis() {
        // Values from `CLUSTER KEYSLOT` on Redis 7 and the cluster specification's CRC16 check value (0x31C3).
        #expect(RedisKeySlot.of("123456789") == 0x31C3)
        #expect(RedisKeySlot.of("foo") == 12_182)
        #expect(RedisKeySlot.of("bar") == 5_061)
        #expect(RedisKeySlot.of("") == 0)
        #expect(RedisKeySlot.of("{user1000}.following") == RedisKeySlot.of("user1000"))
        #expect(RedisKeySlot.of("st:{demo:alice}:status") == RedisKeySlot.of("demo:alice"))
        // An empty tag does not count: the whole key is hashed. Only the first `{...}` counts.
        #expect(RedisKeySlot.of("a{}b") == RedisKeySlot.of("a{}b"))
        #expect(RedisKeySlot.of("a{}b") != RedisKeySlot.of(""))
        #expect(RedisKeySlot.of("{a}{b}") == RedisKeySlot.of("a"))
        #expect(RedisKeySlot.of("x{ab") == RedisKeySlot.of("x{ab"))
    }

    @Test func everySlotHasATag() {
        for slot in stride(from: 0, to: RedisKeySlot.count, by: 1) {
            let tag = RedisKeySlot.tag(forSlot: slot)
            #expect(RedisKeySlot.of("bus:{\(tag)}:app") == slot)
        }
    }

    @Test func redirectionsAreParsed() {
        #expect(RedisRedirection(errorMessage: "MOVED 3999 127.0.0.1:6381") == .moved(slot: 3999, endpoint: .tcp(host: "127.0.0.1", port: 6381)))
        #expect(RedisRedirection(errorMessage: "ASK 12 ::1:7000") == .ask(slot: 12, endpoint: .tcp(host: "::1", port: 7000)))
        #expect(RedisRedirection(errorMessage: "TRYAGAIN Multiple keys request during rehashing of slot") == .tryAgain)
        #expect(RedisRedirection(errorMessage: "CLUSTERDOWN The cluster is down") == .clusterDown)
        #expect(RedisRedirection(errorMessage: "ERR unknown command") == nil)
        #expect(RedisRedirection(errorMessage: "MOVED 16384 127.0.0.1:1") == nil)
        #expect(RedisRedirection(errorMessage: "MOVED 1 127.0.0.1") == nil)
        #expect(RedisRedirection(errorMessage: "WRONGTYPE Operation against a key") == nil)
    }

    @Test func theSlotMapIsReadFromClusterSlots() throws {
        func node(_ host: String, _ port: Int64) -> RedisValue {
            .array([.bulkString(Array(host.utf8)), .integer(port), .bulkString(Array("id".utf8))])
        }
        let reply = RedisValue.array([
            .array([.integer(0), .integer(5460), node("10.0.0.1", 7000), node("10.0.0.4", 7003)]),
            .array([.integer(5461), .integer(10922), node("", 7001)]),
            .array([.integer(10923), .integer(16383), node("10.0.0.3", 7002)]),
        ])
        var topology = try RedisClusterTopology(clusterSlots: reply, fallbackHost: "seed")
        #expect(topology.coversAllSlots)
        #expect(topology.master(ofSlot: 0) == .tcp(host: "10.0.0.1", port: 7000))
        #expect(topology.master(ofSlot: 5461) == .tcp(host: "seed", port: 7001))
        #expect(topology.master(ofSlot: 16383) == .tcp(host: "10.0.0.3", port: 7002))
        #expect(topology.servingMasters.count == 3)
        topology.assign(0...5460, to: .tcp(host: "10.0.0.3", port: 7002))
        #expect(topology.servingMasters == [.tcp(host: "seed", port: 7001), .tcp(host: "10.0.0.3", port: 7002)])
        #expect(topology.slots(of: .tcp(host: "seed", port: 7001)) == Array(5461...10922))

        let partial = try RedisClusterTopology(clusterSlots: .array([.array([.integer(0), .integer(10), node("h", 1)])]), fallbackHost: "")
        #expect(!partial.coversAllSlots)
        #expect(partial.master(ofSlot: 11) == nil)
        #expect(throws: RedisClientError.self) { try RedisClusterTopology(clusterSlots: .array([.integer(1)]), fallbackHost: "") }
        #expect(throws: RedisClientError.self) {
            try RedisClusterTopology(clusterSlots: .array([.array([.integer(5), .integer(16384), node("h", 1)])]), fallbackHost: "")
        }
    }

    /// After a failover the nodes learn of the promoted replica one after another: a map that still names the dead
    /// master is kept only while no node has a better one.
    @Test func aRefreshPrefersTheMapOfMastersItCanReach() throws {
        func map(_ owners: [(ClosedRange<Int>, Int)]) -> RedisClusterTopology {
            var topology = RedisClusterTopology()
            for (slots, port) in owners { topology.assign(slots, to: .tcp(host: "h", port: port)) }
            return topology
        }
        let dead = RedisConfiguration.Endpoint.tcp(host: "h", port: 1)
        let stale = map([(0...8191, 1), (8192...16383, 2)])
        let promoted = map([(0...8191, 3), (8192...16383, 2)])
        let partial = map([(8192...16383, 2)])

        // A node that has not heard of the failover answers first: the client asks on, and takes the promoted map.
        var pick = RedisTopologyPick(unreachable: [dead])
        var done = pick.consider(partial)
        #expect(!done && pick.best == partial)
        done = pick.consider(stale)
        #expect(!done && pick.best == stale)
        done = pick.consider(promoted)
        #expect(done && pick.best == promoted)
        // A stale map after it does not replace it.
        _ = pick.consider(stale)
        #expect(pick.best == promoted)

        // No node has heard yet: the stale map that covers every slot is kept, not a partial one read later.
        var none = RedisTopologyPick(unreachable: [dead])
        _ = none.consider(stale)
        _ = none.consider(partial)
        #expect(none.best == stale)

        // With every master reachable, the first map covering every slot ends the refresh.
        var healthy = RedisTopologyPick(unreachable: [])
        done = healthy.consider(stale)
        #expect(done && healthy.best == stale)
    }

    @Test func commandsRouteByTheirKeys() {
        let slot = RedisKeySlot.of("st:{a:b}:status")
        #expect(RedisCommandRoute(["HGETALL", "st:{a:b}:status"]) == .slot(slot))
        #expect(RedisCommandRoute(["evalsha", "abc", "2", "st:{a:b}:status", "st:{a:b}:profile", "arg"]) == .slot(slot))
        #expect(RedisCommandRoute(["EVALSHA", "abc", "0", "arg"]) == .anyNode)
        #expect(RedisCommandRoute(["PING"]) == .anyNode)
        #expect(RedisCommandRoute(["SCRIPT", "LOAD", "return 1"]) == .anyNode)
        #expect(RedisCommandRoute(["PUBLISH", "st:{a:b}:status", "x"]) == .anyNode)
        #expect(RedisCommandRoute(["SPUBLISH", "st:{a:b}:bus", "x"]) == .slot(slot))
        #expect(RedisCommandRoute(["PUBSUB", "SHARDNUMSUB", "st:{a:b}:bus"]) == .slot(slot))
        #expect(RedisCommandRoute(["PUBSUB", "NUMSUB", "st:bus"]) == .anyNode)
        #expect(RedisCommandRoute(["XREADGROUP", "GROUP", "g", "c", "COUNT", "10", "STREAMS", "st:{a:b}:q", ">"]) == .slot(slot))
        #expect(RedisCommandRoute(["XGROUP", "CREATE", "st:{a:b}:q", "g", "0"]) == .slot(slot))
        #expect(Array(RedisCommandRoute.keys(of: ["MSET", "k1", "v1", "k2", "v2"])) == ["k1", "k2"])
        #expect(Array(RedisCommandRoute.keys(of: ["DEL", "a", "b"])) == ["a", "b"])
    }
}
