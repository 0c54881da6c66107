/// Which master serves each hash slot, as read from `CLUSTER SLOTS`. A pure value: parsed and queried without I/O.
struct RedisClusterTopology: Sendable, Equatable {
    /// The masters, each once, in the order first seen.
    private(set) var masters: [RedisConfiguration.Endpoint] = []
    /// slot → index into ``masters``, or -1 where no node serves the slot.
    private var owners = [Int16](repeating: -1, count: RedisKeySlot.count)

    /// An empty map (no slot served).
    init() {}

    /// Parses a `CLUSTER SLOTS` reply: `[[start, end, [host, port, id, ...], replicas...], ...]`.
    ///
    /// A master announced with an empty host (a node that does not know its own address) is reached at
    /// `fallbackHost`, the host the reply came from. Throws `.protocolError` on any other shape.
    init(clusterSlots reply: RedisValue, fallbackHost: String) throws {
        guard let ranges = reply.array else {
            throw RedisClientError(kind: .protocolError, message: "CLUSTER SLOTS did not answer with an array")
        }
        for range in ranges {
            guard let fields = range.array, fields.count >= 3, let start = fields[0].int, let end = fields[1].int,
                0 <= start, start <= end, end < RedisKeySlot.count, let node = fields[2].array, node.count >= 2,
                let host = node[0].string, let port = node[1].int, (1...65_535).contains(port)
            else {
                throw RedisClientError(kind: .protocolError, message: "CLUSTER SLOTS gave a range of an unknown shape: \(range)")
            }
            self.assign(Int(start)...Int(end), to: .tcp(host: host.isEmpty ? fallbackHost : host, port: Int(port)))
        }
    }

    /// The master serving `slot`, if any.
    func master(ofSlot slot: Int) -> RedisConfiguration.Endpoint? {
        let index = self.owners[slot]
        return index < 0 ? nil : self.masters[Int(index)]
    }

    /// The masters that serve at least one slot: where scripts are loaded and keys are scanned.
    var servingMasters: [RedisConfiguration.Endpoint] {
        var used = [Bool](repeating: false, count: self.masters.count)
        for owner in self.owners where owner >= 0 {
            used[Int(owner)] = true
        }
        return self.masters.indices.filter { used[$0] }.map { self.masters[$0] }
    }

    /// Whether every slot has a master.
    var coversAllSlots: Bool {
        !self.owners.contains(-1)
    }

    /// The slots `endpoint` serves.
    func slots(of endpoint: RedisConfiguration.Endpoint) -> [Int] {
        guard let index = self.masters.firstIndex(of: endpoint) else { return [] }
        return self.owners.indices.filter { self.owners[$0] == Int16(index) }
    }

    /// Records that `endpoint` serves `slots` (a `MOVED` reply says so for one slot).
    mutating func assign(_ slots: ClosedRange<Int>, to endpoint: RedisConfiguration.Endpoint) {
        let index: Int
        if let known = self.masters.firstIndex(of: endpoint) {
            index = known
        } else {
            index = self.masters.count
            self.masters.append(endpoint)
        }
        for slot in slots {
            self.owners[slot] = Int16(index)
        }
    }
}
