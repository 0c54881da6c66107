import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// A Redis client for one server or a Redis Cluster, with pools of pipelined connections. Safe to share across tasks.
///
/// The first call asks the configured server for `CLUSTER SLOTS`. A server without cluster support is used alone, as a
/// pool of `poolSize` connections. A cluster node makes the client a cluster client: each command goes to the master
/// of its keys' hash slot (``RedisCommandRoute``), over that master's own pool; `MOVED` updates the slot map and
/// resends, `ASK` resends once with `ASKING`, `TRYAGAIN` retries shortly, and a connection failure or `CLUSTERDOWN`
/// re-reads the map from any reachable node (so a promoted replica takes over) and fails the call as unavailable: a
/// command whose fate is unknown is never sent twice. See ``RedisConfiguration`` for timeouts and bounds, and
/// ``RedisClientError`` for how failures are reported.
///
/// Run it in a `ServiceGroup` (it closes its connections on graceful shutdown), or call ``close()`` when done.
public final class RedisClient: Sendable, Service {
    /// Whether the server is a cluster node, once known.
    enum Mode: Sendable {
        case unknown
        case single
        case cluster
    }

    private struct Routing: Sendable {
        var mode = Mode.unknown
        var topology = RedisClusterTopology()
        var pools: [RedisConfiguration.Endpoint: RedisNodePool] = [:]
        var lastRefresh: NIODeadline?
        var isRefreshing = false
        var rotation = 0
    }

    /// How many redirections one command may follow before it fails.
    static let maxRedirections = 5
    /// A command refused with `TRYAGAIN` (its keys are split between two masters for the moment of a migration) is
    /// sent again, 10 ms more apart each time up to 100 ms, for as long as the command timeout from its first send: a
    /// slot in motion is no outage, and a script call's deadline (which its caller computes from the same timeout)
    /// would refuse it later anyway.
    static let tryAgainBackoffStep = Duration.milliseconds(10)
    /// The least time between two reads of the slot map.
    static let refreshInterval = TimeAmount.milliseconds(200)

    private let configuration: RedisConfiguration
    private let eventLoopGroup: any EventLoopGroup
    private let seed: RedisNodePool
    private let routing: LockedValue<Routing>
    private let logger: Logger
    private let metrics: RedisClientMetrics

    /// Creates a client; no connection is opened until the first call. Its connection counters go to `metrics`.
    public init(
        configuration: RedisConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        metrics: RedisClientMetrics = RedisClientMetrics()
    ) {
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.metrics = metrics
        self.seed = RedisNodePool(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: logger, metrics: metrics)
        self.routing = LockedValue(Routing(pools: [configuration.endpoint: self.seed]))
    }

    /// Sends one command; an error reply is thrown as `.server`.
    public func send(_ arguments: [String]) async throws -> RedisValue {
        try Self.serverErrorThrown(await self.sendReturningErrors(arguments))
    }

    /// Sends one command; an error reply is thrown as `.server`.
    public func send(_ arguments: String...) async throws -> RedisValue {
        try await self.send(arguments)
    }

    /// Sends one command to the one server at `endpoint` (one of ``masterEndpoints()``), not where its route would take
    /// it: for what concerns that server alone, such as `CLIENT LIST` and `CLIENT KILL` of the connections it holds.
    /// Redirections are not followed; an error reply is thrown as `.server`.
    public func send(_ arguments: [String], to endpoint: RedisConfiguration.Endpoint) async throws -> RedisValue {
        try Self.serverErrorThrown(await self.sendReturningErrors(arguments, to: endpoint))
    }

    /// `value`, unless it is an error reply, which is thrown as `.server`.
    private static func serverErrorThrown(_ value: RedisValue) throws -> RedisValue {
        if case .error(let message) = value {
            throw RedisClientError(kind: .server, message: message)
        }
        return value
    }

    /// Sends all commands in one flush per server (one connection each); error replies come back as `.error` values,
    /// not thrown. On a cluster the commands are grouped by master, the groups sent at once, and the replies put back
    /// in order; commands of one slot keep their order.
    public func pipeline(_ commands: [[String]]) async throws -> [RedisValue] {
        guard !commands.isEmpty else {
            return []
        }
        for command in commands {
            guard !command.isEmpty else {
                throw RedisClientError(kind: .protocolError, message: "a pipelined command has no arguments")
            }
            RedisCommandRoute.assertOneSlot(command)
        }
        guard try await self.isCluster() else {
            return try await self.seed.pipeline(Self.encode(commands), count: commands.count)
        }
        return try await self.clusterPipeline(commands)
    }

    /// EVALSHA with the script's SHA1; on a NOSCRIPT error, the script is loaded on every master for the calls after
    /// this one, and this one is sent once more as `EVAL` with the source, which runs wherever it lands: a master added
    /// to a cluster after the node last read its topology (a reshard under way) has no script yet, and is not among
    /// the masters it was loaded on.
    ///
    /// `acrossSlots`: the keys may be of several hash slots, which only a single server runs in one script; on a cluster
    /// the call throws `.protocolError` without sending anything. Otherwise a debug build stops at keys of several slots
    /// (``RedisCommandRoute/assertOneSlot(_:)``), on a single server too.
    public func evalScript(_ script: RedisScript, keys: [String], arguments: [String], acrossSlots: Bool = false) async throws -> RedisValue {
        let command = Self.evalsha(script, keys: keys, arguments: arguments)
        do {
            return try Self.serverErrorThrown(await self.sendReturningErrors(command, acrossSlots: acrossSlots))
        } catch let error as RedisClientError where error.kind == .server && error.message.hasPrefix("NOSCRIPT") {
            self.logger.info("Redis script not loaded, loading it", metadata: ["script": "\(script.name)"])
            try? await self.loadScripts([script])
            return try Self.serverErrorThrown(await self.sendReturningErrors(Self.withSource([command], of: [script])[0], acrossSlots: acrossSlots))
        }
    }

    /// The `EVALSHA` of `script`, built in one array (it is sent on every status write and every connect).
    public static func evalsha(_ script: RedisScript, keys: [String], arguments: [String]) -> [String] {
        var command: [String] = []
        command.reserveCapacity(3 + keys.count + arguments.count)
        command.append("EVALSHA")
        command.append(script.sha1)
        command.append(String(keys.count))
        command.append(contentsOf: keys)
        command.append(contentsOf: arguments)
        return command
    }

    /// `commands` with each `EVALSHA` of one of `scripts` turned into an `EVAL` of its source.
    static func withSource(_ commands: [[String]], of scripts: [RedisScript]) -> [[String]] {
        let sources = Dictionary(scripts.map { ($0.sha1, $0.source) }, uniquingKeysWith: { first, _ in first })
        return commands.map { command in
            guard command.count >= 2, command[0] == "EVALSHA", let source = sources[command[1]] else { return command }
            var eval = command
            eval[0] = "EVAL"
            eval[1] = source
            return eval
        }
    }

    /// EVALSHA followed by more commands, all written in one flush on one connection (one round trip): the script's
    /// reply comes first, then one reply per command; error replies come back as `.error` values. On NOSCRIPT the
    /// script is loaded and the whole pipeline sent once more, the script as `EVAL` (as ``evalScript(_:keys:arguments:acrossSlots:)``
    /// does; the commands after it must be safe to repeat: reads).
    public func pipeline(script: RedisScript, keys: [String], arguments: [String], then commands: [[String]]) async throws -> [RedisValue] {
        var all = [Self.evalsha(script, keys: keys, arguments: arguments)]
        all.append(contentsOf: commands)
        let replies = try await self.pipeline(all)
        guard case .error(let message) = replies.first, message.hasPrefix("NOSCRIPT") else { return replies }
        self.logger.info("Redis script not loaded, loading it", metadata: ["script": "\(script.name)"])
        try? await self.loadScripts([script])
        return try await self.pipeline(Self.withSource(all, of: [script]))
    }

    /// A pipeline holding `EVALSHA`s of `scripts`: when Redis lost a script (`NOSCRIPT` in any reply, as after a
    /// restart), the scripts are loaded and the whole pipeline sent once more with the scripts as `EVAL` (as
    /// ``evalScript(_:keys:arguments:acrossSlots:)`` does), so every command in it must be safe to repeat.
    public func pipelineLoadingScripts(_ commands: [[String]], scripts: [RedisScript]) async throws -> [RedisValue] {
        let replies = try await self.pipeline(commands)
        guard replies.contains(where: { if case .error(let message) = $0 { message.hasPrefix("NOSCRIPT") } else { false } }) else {
            return replies
        }
        self.logger.info("Redis scripts not loaded, loading them", metadata: ["scripts": "\(scripts.map(\.name))"])
        try? await self.loadScripts(scripts)
        return try await self.pipeline(Self.withSource(commands, of: scripts))
    }

    /// SCRIPT LOAD each script, on every master of a cluster; the first refusal is thrown as `.server`.
    public func loadScripts(_ scripts: [RedisScript]) async throws {
        let commands = scripts.map { ["SCRIPT", "LOAD", $0.source] }
        for pool in try await self.masterPools() {
            let replies = try await pool.pipeline(Self.encode(commands), count: commands.count)
            for (script, reply) in zip(scripts, replies) {
                try self.checkLoaded(script, reply: reply)
            }
        }
    }

    /// Calls `body` with each batch of key names matching `pattern`, from `SCAN` on the server or on every master of a
    /// cluster. A key may be reported more than once (as `SCAN` may); keys created during the scan may be missed.
    public func scanKeys(matching pattern: String, count: Int = 1000, _ body: ([String]) async throws -> Void) async throws {
        for pool in try await self.masterPools() {
            var cursor = "0"
            repeat {
                let reply = try await pool.send(Self.encode([["SCAN", cursor, "MATCH", pattern, "COUNT", String(count)]]))
                if case .error(let message) = reply {
                    throw RedisClientError(kind: .server, message: message)
                }
                guard let parts = reply.array, parts.count == 2, let next = parts[0].string else {
                    throw RedisClientError(kind: .protocolError, message: "SCAN answered with an unknown shape")
                }
                cursor = next
                let keys = parts[1].array?.compactMap(\.string) ?? []
                if !keys.isEmpty {
                    try await body(keys)
                }
            } while cursor != "0"
        }
    }

    /// Whether the server is a Redis Cluster node (asked once, on first use).
    public func isCluster() async throws -> Bool {
        switch self.routing.withLock({ $0.mode }) {
        case .single: return false
        case .cluster: return true
        case .unknown: return try await self.detectMode()
        }
    }

    /// The master serving `slot` on a cluster (the configured server otherwise): where a shard channel of that slot is
    /// subscribed to.
    public func endpoint(ofSlot slot: Int) async throws -> RedisConfiguration.Endpoint {
        guard try await self.isCluster() else { return self.configuration.endpoint }
        return try await self.pool(for: .slot(slot)).endpoint
    }

    /// The server a command whose first key is `key` goes to now, as far as the client knows, without asking anything:
    /// the configured server unless this is a cluster, else the master the slot map names for the key's slot (nil when
    /// none, or for no key). Cheap enough for every call: a slot and a lookup.
    public func currentEndpoint(forKey key: String?) -> RedisConfiguration.Endpoint? {
        self.routing.withLock { routing in
            guard routing.mode == .cluster else { return self.configuration.endpoint }
            return key.flatMap { routing.topology.master(ofSlot: RedisKeySlot.of($0)) }
        }
    }

    /// The masters that serve slots (the configured server alone when it is not a cluster).
    public func masterEndpoints() async throws -> [RedisConfiguration.Endpoint] {
        try await self.masterPools().map(\.endpoint)
    }

    /// This client's configuration with another endpoint: how to reach one node of the cluster.
    public func configuration(for endpoint: RedisConfiguration.Endpoint) -> RedisConfiguration {
        var configuration = self.configuration
        if endpoint != configuration.endpoint {
            configuration.endpoint = endpoint
            configuration.database = 0
        }
        return configuration
    }

    /// Reads the slot map again, now (at most once per ``refreshInterval``): after a subscriber saw its slot move.
    public func refreshTopology() async {
        guard self.routing.withLock({ $0.mode }) == .cluster else { return }
        await self.refreshTopologyThrottled()
    }

    /// ServiceLifecycle: waits for graceful shutdown, then closes every connection.
    public func run() async throws {
        // Cancellation ends the wait too; either way the connections are closed.
        try? await gracefulShutdown()
        await self.close()
    }

    /// Closes every connection; in-flight calls fail with .connectionClosed.
    public func close() async {
        let pools = self.routing.withLock { Array($0.pools.values) }
        for pool in pools {
            await pool.close()
        }
    }

    // MARK: - Single server or cluster

    private func detectMode() async throws -> Bool {
        let reply = try await self.seed.send(Self.encode([["CLUSTER", "SLOTS"]]))
        guard case .array = reply else {
            // "ERR This instance has cluster support disabled" (or a server that does not know the command).
            return self.routing.withLock { routing in
                if routing.mode == .unknown { routing.mode = .single }
                return routing.mode == .cluster
            }
        }
        self.apply(try RedisClusterTopology(clusterSlots: reply, fallbackHost: self.seedHost))
        return true
    }

    private var seedHost: String {
        if case .tcp(let host, _) = self.configuration.endpoint { return host }
        return "127.0.0.1"
    }

    /// Sends one command where its route takes it, or to `endpoint` alone; error replies come back as values.
    private func sendReturningErrors(
        _ arguments: [String],
        to endpoint: RedisConfiguration.Endpoint? = nil,
        acrossSlots: Bool = false
    ) async throws -> RedisValue {
        guard !arguments.isEmpty else {
            throw RedisClientError(kind: .protocolError, message: "a command needs at least one argument")
        }
        if acrossSlots {
            guard try await !self.isCluster() else {
                throw RedisClientError(kind: .protocolError, message: "a command with keys of several hash slots needs a single server")
            }
        } else {
            RedisCommandRoute.assertOneSlot(arguments)
        }
        let bytes = Self.encode(arguments)
        if let endpoint {
            return try await self.pool(at: endpoint).send(bytes)
        }
        guard try await self.isCluster() else {
            return try await self.seed.send(bytes)
        }
        return try await self.clusterSend(arguments, bytes: bytes, to: try await self.pool(for: RedisCommandRoute(arguments)))
    }

    // MARK: - Cluster routing

    /// Sends one command to `target`, following redirections.
    private func clusterSend(_ command: [String], bytes: ByteBuffer, to target: RedisNodePool) async throws -> RedisValue {
        var target = target
        var asking = false
        var redirections = 0
        var tryAgains = 0
        let started = ContinuousClock.now
        while redirections < Self.maxRedirections {
            let reply: RedisValue
            do {
                if asking {
                    var askingBytes = Self.encode([["ASKING"]])
                    askingBytes.writeImmutableBuffer(bytes)
                    reply = try await target.pipeline(askingBytes, count: 2)[1]
                } else {
                    reply = try await target.send(bytes)
                }
            } catch let error as RedisClientError where error.isConnectionProblem {
                await self.refreshTopologyThrottled()
                throw error
            }
            guard case .error(let message) = reply, let redirection = RedisRedirection(errorMessage: message) else {
                return reply
            }
            self.metrics.redirections.increment()
            switch redirection {
            case .moved(let slot, let endpoint):
                target = self.assign(slot: slot, to: endpoint)
                asking = false
                redirections += 1
            case .ask(_, let endpoint):
                target = self.pool(at: endpoint)
                asking = true
                redirections += 1
            case .tryAgain:
                tryAgains += 1
                let pause = min(Self.tryAgainBackoffStep * tryAgains, .milliseconds(100))
                guard ContinuousClock.now + pause - started < self.configuration.commandTimeout else {
                    throw RedisClientError(kind: .connectionUnavailable, message: "\(command[0]): the cluster kept answering TRYAGAIN")
                }
                try await Task.sleep(for: pause)
            case .clusterDown:
                await self.refreshTopologyThrottled()
                throw RedisClientError(kind: .connectionUnavailable, message: message)
            }
        }
        throw RedisClientError(kind: .connectionUnavailable, message: "\(command[0]): more than \(Self.maxRedirections) cluster redirections")
    }

    private func clusterPipeline(_ commands: [[String]]) async throws -> [RedisValue] {
        var groups: [(pool: RedisNodePool, indices: [Int])] = []
        for (index, command) in commands.enumerated() {
            let pool = try await self.pool(for: RedisCommandRoute(command))
            if let group = groups.firstIndex(where: { $0.pool === pool }) {
                groups[group].indices.append(index)
            } else {
                groups.append((pool, [index]))
            }
        }
        var replies = [RedisValue](repeating: .null, count: commands.count)
        do {
            if groups.count == 1 {
                replies = try await groups[0].pool.pipeline(Self.encode(commands), count: commands.count)
            } else {
                try await withThrowingTaskGroup(of: ([Int], [RedisValue]).self) { tasks in
                    for group in groups {
                        let bytes = Self.encode(group.indices.map { commands[$0] })
                        tasks.addTask { (group.indices, try await group.pool.pipeline(bytes, count: group.indices.count)) }
                    }
                    for try await (indices, groupReplies) in tasks {
                        for (index, reply) in zip(indices, groupReplies) {
                            replies[index] = reply
                        }
                    }
                }
            }
        } catch let error as RedisClientError where error.isConnectionProblem {
            await self.refreshTopologyThrottled()
            throw error
        }
        // Commands redirected (their slot moved or is moving) are sent again one by one, where they now belong.
        for index in replies.indices {
            guard case .error(let message) = replies[index], let redirection = RedisRedirection(errorMessage: message) else { continue }
            let pool: RedisNodePool
            switch redirection {
            case .moved(let slot, let endpoint): pool = self.assign(slot: slot, to: endpoint)
            case .ask, .tryAgain, .clusterDown: pool = try await self.pool(for: RedisCommandRoute(commands[index]))
            }
            replies[index] = try await self.clusterSend(commands[index], bytes: Self.encode([commands[index]]), to: pool)
        }
        return replies
    }

    /// The pool a command of `route` goes to; a slot no known master serves makes the client read the map again.
    private func pool(for route: RedisCommandRoute) async throws -> RedisNodePool {
        guard case .slot(let slot) = route else {
            return self.routing.withLock { routing in
                let masters = routing.topology.servingMasters.compactMap { routing.pools[$0] }.filter { !$0.isUnreachable }
                guard !masters.isEmpty else { return self.seed }
                routing.rotation &+= 1
                return masters[routing.rotation % masters.count]
            }
        }
        for attempt in 0..<2 {
            if let pool = self.routing.withLock({ routing in routing.topology.master(ofSlot: slot).flatMap { routing.pools[$0] } }) {
                return pool
            }
            if attempt == 0 { await self.refreshTopologyThrottled() }
        }
        throw RedisClientError(kind: .connectionUnavailable, message: "no reachable redis cluster master serves slot \(slot)")
    }

    private func masterPools() async throws -> [RedisNodePool] {
        guard try await self.isCluster() else { return [self.seed] }
        let pools = self.routing.withLock { routing in routing.topology.servingMasters.compactMap { routing.pools[$0] } }
        guard !pools.isEmpty else {
            throw RedisClientError(kind: .connectionUnavailable, message: "the redis cluster has no master serving slots")
        }
        return pools
    }

    /// The pool of `endpoint`, created on first use.
    private func pool(at endpoint: RedisConfiguration.Endpoint) -> RedisNodePool {
        self.routing.withLock { routing in
            if let pool = routing.pools[endpoint] { return pool }
            let pool = RedisNodePool(
                configuration: self.configuration(for: endpoint),
                eventLoopGroup: self.eventLoopGroup,
                logger: self.logger,
                metrics: self.metrics
            )
            routing.pools[endpoint] = pool
            return pool
        }
    }

    /// Records a `MOVED`: `slot` is served by `endpoint` from now on.
    private func assign(slot: Int, to endpoint: RedisConfiguration.Endpoint) -> RedisNodePool {
        let pool = self.pool(at: endpoint)
        self.routing.withLock { $0.topology.assign(slot...slot, to: endpoint) }
        return pool
    }

    /// Reads `CLUSTER SLOTS` from the nodes that answer (known masters first, then the configured one) until one gives a
    /// map of reachable masters covering every slot (``RedisTopologyPick``), unless that was done less than
    /// ``refreshInterval`` ago or is being done now.
    private func refreshTopologyThrottled() async {
        let refresh: (candidates: [RedisNodePool], pick: RedisTopologyPick)? = self.routing.withLock { routing in
            let now = NIODeadline.now()
            guard !routing.isRefreshing, routing.lastRefresh.map({ now - $0 >= Self.refreshInterval }) ?? true else { return nil }
            routing.isRefreshing = true
            var pools = routing.topology.masters.compactMap { routing.pools[$0] }.filter { !$0.isUnreachable }
            if !pools.contains(where: { $0 === self.seed }) { pools.append(self.seed) }
            pools += routing.pools.values.filter { pool in !pools.contains { $0 === pool } }
            let unreachable = Set(routing.pools.values.filter(\.isUnreachable).map(\.endpoint))
            return (pools, RedisTopologyPick(unreachable: unreachable))
        }
        guard let refresh else { return }
        var pick = refresh.pick
        for pool in refresh.candidates {
            guard let reply = try? await pool.send(Self.encode([["CLUSTER", "SLOTS"]])), case .array = reply else { continue }
            let host: String
            if case .tcp(let nodeHost, _) = pool.endpoint { host = nodeHost } else { host = self.seedHost }
            guard let topology = try? RedisClusterTopology(clusterSlots: reply, fallbackHost: host) else { continue }
            if pick.consider(topology) { break }
        }
        if let found = pick.best {
            self.metrics.topologyRefreshes.increment()
            self.apply(found)
        } else {
            self.routing.withLock { routing in
                routing.isRefreshing = false
                routing.lastRefresh = .now()
            }
        }
    }

    /// Takes `topology` as the slot map (creating pools for new masters) and records the read as the latest refresh.
    private func apply(_ topology: RedisClusterTopology) {
        for endpoint in topology.masters {
            _ = self.pool(at: endpoint)
        }
        self.routing.withLock { routing in
            if routing.topology.servingMasters != topology.servingMasters {
                self.logger.info("Redis cluster masters", metadata: ["masters": "\(topology.servingMasters.map(\.logDescription))"])
            }
            routing.mode = .cluster
            routing.topology = topology
            routing.isRefreshing = false
            routing.lastRefresh = .now()
        }
    }

    private func checkLoaded(_ script: RedisScript, reply: RedisValue) throws {
        if case .error(let message) = reply {
            throw RedisClientError(kind: .server, message: "SCRIPT LOAD \(script.name): \(message)")
        }
        if reply.string != script.sha1 {
            self.logger.warning(
                "Redis returned another SHA1 for a script",
                metadata: ["script": "\(script.name)", "expected": "\(script.sha1)", "got": "\(reply.string ?? "\(reply)")"]
            )
        }
    }

    private static func encode(_ commands: [[String]]) -> ByteBuffer {
        var bytes = ByteBufferAllocator().buffer(capacity: commands.reduce(0) { $0 + RedisCommandEncoder.size(of: $1) })
        for command in commands {
            RedisCommandEncoder.encode(command, into: &bytes)
        }
        return bytes
    }

    /// One command's bytes, in a buffer of their exact size.
    private static func encode(_ command: [String]) -> ByteBuffer {
        var bytes = ByteBufferAllocator().buffer(capacity: RedisCommandEncoder.size(of: command))
        RedisCommandEncoder.encode(command, into: &bytes)
        return bytes
    }
}
