/// Which of the slot maps read from several nodes the client takes. A pure value: fed `CLUSTER SLOTS` maps, it says
/// when to stop asking and which map to keep.
///
/// Cluster nodes learn of a failover by gossip, one after another: for a moment after a replica is promoted, a node
/// that has not heard yet still names the dead master. A map that names a master the client cannot reach (all of its
/// connections in reconnect backoff) is therefore kept only until a better one comes: the client asks the other nodes
/// too, and takes the first map that covers every slot with masters it can reach. When no node gives one, it keeps
/// the first map that covers every slot, else the first it read.
struct RedisTopologyPick {
    /// The masters the client could not reach when the refresh began.
    let unreachable: Set<RedisConfiguration.Endpoint>
    /// The map to take so far.
    private(set) var best: RedisClusterTopology?
    private var bestRank = -1

    init(unreachable: Set<RedisConfiguration.Endpoint>) {
        self.unreachable = unreachable
    }

    /// Takes one node's map into account; `true` when it is as good as a map gets, so no other node need be asked.
    mutating func consider(_ topology: RedisClusterTopology) -> Bool {
        let rank = self.rank(of: topology)
        if rank > self.bestRank {
            self.best = topology
            self.bestRank = rank
        }
        return self.bestRank == 2
    }

    /// 2: every slot served by a master the client can reach; 1: every slot served; 0: some slot unserved.
    private func rank(of topology: RedisClusterTopology) -> Int {
        guard topology.coversAllSlots else { return 0 }
        return topology.servingMasters.contains(where: self.unreachable.contains) ? 1 : 2
    }
}
