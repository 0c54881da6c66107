/// What a cluster node's error reply asks the client to do instead of failing (Redis Cluster specification,
/// "Redirection and resharding").
enum RedisRedirection: Equatable, Sendable {
    /// `MOVED <slot> <host:port>`: the slot lives on another node for good; update the map and send it there.
    case moved(slot: Int, endpoint: RedisConfiguration.Endpoint)
    /// `ASK <slot> <host:port>`: the slot is being migrated and this key is already there; send `ASKING` and the
    /// command to that node, this once, without updating the map.
    case ask(slot: Int, endpoint: RedisConfiguration.Endpoint)
    /// `TRYAGAIN`: a multi-key command during a migration; retry shortly.
    case tryAgain
    /// `CLUSTERDOWN`: the cluster cannot serve this slot right now (e.g. a failover in progress).
    case clusterDown

    /// Parses an error reply; `nil` for an error that is the command's own.
    init?(errorMessage message: String) {
        if message.hasPrefix("TRYAGAIN") {
            self = .tryAgain
            return
        }
        if message.hasPrefix("CLUSTERDOWN") {
            self = .clusterDown
            return
        }
        let parts = message.split(separator: " ")
        guard parts.count == 3, parts[0] == "MOVED" || parts[0] == "ASK", let slot = Int(parts[1]),
            (0..<RedisKeySlot.count).contains(slot), let endpoint = Self.endpoint(parts[2])
        else {
            return nil
        }
        self = parts[0] == "MOVED" ? .moved(slot: slot, endpoint: endpoint) : .ask(slot: slot, endpoint: endpoint)
    }

    /// `host:port`, the host possibly an IPv6 address (`::1:7000`): the port is after the last colon.
    static func endpoint(_ text: Substring) -> RedisConfiguration.Endpoint? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65_535).contains(port) else {
            return nil
        }
        var host = text[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = host.dropFirst().dropLast()
        }
        return .tcp(host: String(host), port: port)
    }
}
