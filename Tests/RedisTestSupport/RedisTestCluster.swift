import Foundation
import RedisClient

/// A private Redis Cluster of `redis-server` child processes on loopback, for the cluster tests of the Redis client and
/// of the service: masters made with
/// `redis-cli --cluster create`, optional replicas, a short node timeout so that a failover takes about two seconds.
public final class RedisTestCluster: @unchecked Sendable {
    // @unchecked: the processes are only touched by the test that owns the cluster, one call at a time.
    public struct Node: Sendable {
        public let port: Int
        var process: Process?
        /// Whether the node's process runs (it was not killed).
        public var isRunning: Bool { self.process != nil }
        public var endpoint: RedisConfiguration.Endpoint { .tcp(host: "127.0.0.1", port: self.port) }
    }

    public private(set) var nodes: [Node] = []
    let directory: URL

    /// The URL of the first master: the seed a client is given.
    public var url: String { "redis://127.0.0.1:\(self.nodes[0].port)" }

    private init(directory: URL) {
        self.directory = directory
    }

    /// Starts `masters` masters sharing the slots evenly, and `replicas` replicas of the first master.
    ///
    /// On a loaded machine a node can drop a handshake before it completes (the node timeout is short), and
    /// `redis-cli --cluster create` then waits for a join that never comes: a creation that does not finish within
    /// 20 s is given up, its nodes stopped, and a new cluster on other ports is made, up to three times.
    ///
    /// `clockShifts`: nodes (by index) whose wall clock runs that far ahead of the machine's, or behind (``ClockShift``).
    public static func start(masters: Int = 3, replicas: Int = 0, clockShifts: [Int: Duration] = [:]) async throws -> RedisTestCluster {
        var attempt = 1
        while true {
            do {
                return try await self.startOnce(masters: masters, replicas: replicas, clockShifts: clockShifts)
            } catch let error as RedisTestClusterError where attempt < 3 {
                attempt += 1
                FileHandle.standardError.write(Data("test cluster not formed, trying again: \(error.message)\n".utf8))
            }
        }
    }

    private static func startOnce(masters: Int, replicas: Int, clockShifts: [Int: Duration]) async throws -> RedisTestCluster {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("statusd-cluster-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let cluster = RedisTestCluster(directory: directory)
        do {
            for index in 0..<(masters + replicas) {
                try await cluster.launch(port: try await clusterPort(), clockShift: clockShifts[index])
            }
            let addresses = cluster.nodes.prefix(masters).map { "127.0.0.1:\($0.port)" }
            try cluster.cli(["--cluster", "create"] + addresses + ["--cluster-replicas", "0", "--cluster-yes"], timeout: 20)
            let firstMaster = try cluster.nodeId(port: cluster.nodes[0].port)
            for replica in cluster.nodes.dropFirst(masters) {
                try cluster.cli([
                    "--cluster", "add-node", "127.0.0.1:\(replica.port)", "127.0.0.1:\(cluster.nodes[0].port)", "--cluster-slave",
                    "--cluster-master-id", firstMaster,
                ])
            }
            try await cluster.waitUntilHealthy(replicas: replicas)
        } catch {
            await cluster.stop()
            throw error
        }
        return cluster
    }

    /// Kills every node and removes their files.
    public func stop() async {
        for index in self.nodes.indices {
            await self.kill(index)
        }
        try? FileManager.default.removeItem(at: self.directory)
    }

    /// Kills node `index` at once (SIGKILL), as a crash would.
    public func kill(_ index: Int) async {
        guard let process = self.nodes[index].process else { return }
        self.nodes[index].process = nil
        Foundation.kill(process.processIdentifier, SIGKILL)
        while process.isRunning {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The node id of the node on `port`.
    public func nodeId(port: Int) throws -> String {
        try self.cli(["-p", "\(port)", "CLUSTER", "MYID"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The port of the master that serves `slot`, as the node on `askingPort` (default: the first live one) sees it.
    public func masterPort(ofSlot slot: Int, askingPort: Int? = nil) throws -> Int {
        guard let port = try self.slotOwners(askingPort: askingPort)[slot] else {
            throw RedisTestClusterError(message: "no master serves slot \(slot)")
        }
        return port
    }

    /// Every slot's master port, from one `CLUSTER NODES` of the node on `askingPort` (default: the first live one).
    public func slotOwners(askingPort: Int? = nil) throws -> [Int: Int] {
        let asking = askingPort ?? self.nodes.first { $0.process != nil }!.port
        var owners: [Int: Int] = [:]
        // CLUSTER NODES: id, ip:port@bus, flags, master, ping, pong, epoch, link, then slot ranges ("0-5460", "7").
        for line in try self.cli(["-p", "\(asking)", "CLUSTER", "NODES"]).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 9, fields[2].contains("master"), !fields[2].contains("fail") else { continue }
            let port = Int(fields[1].split(separator: "@")[0].split(separator: ":").last!)!
            for range in fields[8...] where !range.hasPrefix("[") {
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                guard let first = bounds.first else { continue }
                for slot in first...(bounds.last ?? first) { owners[slot] = port }
            }
        }
        return owners
    }

    /// Moves `slot` (empty or not) from one master to another, as `redis-cli --cluster reshard` does for each slot.
    public func migrate(slot: Int, from: Int, to: Int) throws {
        let fromId = try self.nodeId(port: from)
        let toId = try self.nodeId(port: to)
        try self.cli(["-p", "\(to)", "CLUSTER", "SETSLOT", "\(slot)", "IMPORTING", fromId])
        try self.cli(["-p", "\(from)", "CLUSTER", "SETSLOT", "\(slot)", "MIGRATING", toId])
        while true {
            let keys = try self.cli(["-p", "\(from)", "CLUSTER", "GETKEYSINSLOT", "\(slot)", "100"]).split(separator: "\n").map(String.init)
            if keys.isEmpty { break }
            try self.cli(["-p", "\(from)", "MIGRATE", "127.0.0.1", "\(to)", "", "0", "5000", "KEYS"] + keys)
        }
        for node in self.nodes where node.process != nil {
            try self.cli(["-p", "\(node.port)", "CLUSTER", "SETSLOT", "\(slot)", "NODE", toId])
        }
    }

    /// Waits until every replica of the master on `port` has acknowledged all it wrote (`INFO replication`: each
    /// `slaveN:...,offset=` equal to `master_repl_offset`). Redis replicates asynchronously: a write the master
    /// acknowledged but no replica has yet is lost if the master dies now.
    public func waitUntilReplicated(masterPort port: Int, timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let info = try self.cli(["-p", "\(port)", "INFO", "replication"])
            let lines = info.split(whereSeparator: \.isNewline)
            let master = lines.first { $0.hasPrefix("master_repl_offset:") }.flatMap { Int($0.split(separator: ":")[1]) }
            let replicas = lines.filter { $0.hasPrefix("slave") && $0.contains("offset=") }.compactMap { line in
                line.split(separator: ",").first { $0.hasPrefix("offset=") }.flatMap { Int($0.dropFirst("offset=".count)) }
            }
            if let master, !replicas.isEmpty, replicas.allSatisfy({ $0 == master }) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw RedisTestClusterError(message: "the replicas of the master on port \(port) did not catch up")
    }

    /// What the live nodes say of the cluster (`CLUSTER NODES` and each node's replication role), for a failed
    /// test's message.
    public func diagnostics() -> String {
        var text = ""
        for node in self.nodes where node.process != nil {
            let nodes = (try? self.cli(["-p", "\(node.port)", "CLUSTER", "NODES"])) ?? "(no answer)"
            let replication = (try? self.cli(["-p", "\(node.port)", "INFO", "replication"])) ?? "(no answer)"
            let role = replication.split(whereSeparator: \.isNewline).filter {
                $0.hasPrefix("role:") || $0.hasPrefix("master_link_status:") || $0.hasPrefix("slave0:") || $0.hasPrefix("master_repl_offset:")
            }
            text += "node \(node.port): \(role.joined(separator: " "))\n\(nodes)\n"
        }
        return text
    }

    /// How long one `redis-cli` run may take before it is killed (a reshard of the tests' size takes a few seconds).
    public static let cliTimeout: TimeInterval = 60

    /// Runs `redis-cli` with `arguments` and returns its standard output; throws when it exits with a failure or is
    /// killed after `timeout` seconds.
    @discardableResult
    public func cli(_ arguments: [String], timeout: TimeInterval = cliTimeout) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            let ending = process.terminationReason == .uncaughtSignal ? "was stopped after \(Int(timeout)) s" : "failed"
            throw RedisTestClusterError(message: "redis-cli \(arguments.joined(separator: " ")) \(ending): \(text.suffix(2000))")
        }
        return text
    }

    /// Waits until every node reports `cluster_state:ok` and the replicas are attached.
    public func waitUntilHealthy(replicas: Int = 0, timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let live = self.nodes.filter { $0.process != nil }
            let healthy = live.allSatisfy { node in
                (try? self.cli(["-p", "\(node.port)", "CLUSTER", "INFO"]))?.contains("cluster_state:ok") == true
            }
            // A replica takes over only with recent data: wait until each has synced with its master.
            let attached = self.nodes.suffix(replicas).allSatisfy { node in
                (try? self.cli(["-p", "\(node.port)", "INFO", "replication"]))?.contains("master_link_status:up") == true
            }
            if healthy && attached {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw RedisTestClusterError(message: "the test cluster did not become healthy")
    }

    private func launch(port: Int, clockShift: Duration?) async throws {
        let process = Process()
        if let clockShift {
            process.environment = ProcessInfo.processInfo.environment.merging(try ClockShift.environment(shift: clockShift)) { $1 }
        }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = [
            "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no",
            "--cluster-enabled", "yes", "--cluster-config-file", self.directory.appendingPathComponent("nodes-\(port).conf").path,
            "--cluster-node-timeout", "1000", "--dir", self.directory.path,
            // A replica syncs at once instead of after the default 5 s wait for more replicas to share the transfer.
            "--repl-diskless-sync-delay", "0",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.nodes.append(Node(port: port, process: process))
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? self.cli(["-p", "\(port)", "PING"]))?.contains("PONG") != true {
            guard ContinuousClock.now < deadline, process.isRunning else {
                throw RedisTestClusterError(message: "cluster node on port \(port) did not start")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A free port whose cluster bus port (port + 10000) is free too (so at most 55535).
    private static func clusterPort() async throws -> Int {
        for _ in 0..<1000 {
            let port = Int.random(in: 20_000...55_535)
            if isFree(port), isFree(port + 10_000) { return port }
        }
        throw RedisTestClusterError(message: "no free port pair for a cluster node")
    }

    private static func isFree(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr = in_addr(s_addr: inet_addr("127.0.0.1"))
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// A failure to start or drive the test cluster.
public struct RedisTestClusterError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { self.message }
}

/// Runs `body` against a private cluster, stopped afterwards whatever happens.
public func withTestCluster(
    masters: Int = 3,
    replicas: Int = 0,
    clockShifts: [Int: Duration] = [:],
    _ body: (RedisTestCluster) async throws -> Void
) async throws {
    let cluster = try await RedisTestCluster.start(masters: masters, replicas: replicas, clockShifts: clockShifts)
    do {
        try await body(cluster)
    } catch {
        await cluster.stop()
        throw error
    }
    await cluster.stop()
}
