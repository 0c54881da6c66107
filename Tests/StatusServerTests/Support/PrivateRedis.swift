import Foundation
import Logging
import RedisClient
import StatusServer

#if canImport(Glibc)
import Glibc
#endif

/// A redis-server of one test's own, on a free port, without persistence: for tests that count the server's commands
/// (`INFO commandstats`), which the shared server counts for every test running at the same time.
final class PrivateRedis: Sendable {
    let port: Int
    private let process: Process

    var configuration: RedisConfiguration { RedisConfiguration(endpoint: .tcp(host: "127.0.0.1", port: port)) }

    /// Makes a node's configuration use this server (for `withStatusd(configure: server.install)`).
    func install(in configuration: inout ServerConfiguration) {
        configuration.redis = self.configuration
    }

    private init(port: Int, process: Process) {
        self.port = port
        self.process = process
    }

    /// Starts a server and waits until it answers.
    static func start() async throws -> PrivateRedis {
        let port = try ChildNode.freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = PrivateRedis(port: port, process: process)
        for _ in 0..<200 {
            if server.answers() { return server }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        server.stop()
        throw TestAppError(message: "private redis-server did not start on port \(port)")
    }

    /// Pauses the server (SIGSTOP): a silent Redis. Its sockets stay open and its kernel takes every byte sent (and
    /// completes new connections from its backlog), but nothing is answered, as over a network path that drops
    /// packets; resumed (SIGCONT), it runs whatever it was sent meanwhile, as when such a path comes back.
    func pause() {
        kill(process.processIdentifier, SIGSTOP)
    }

    /// Resumes a paused server.
    func resume() {
        kill(process.processIdentifier, SIGCONT)
    }

    /// Stops the server and waits for it to exit.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }

    /// Whether the port accepts a connection.
    private func answers() -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// Runs `body` with a private redis-server, stopped afterwards.
func withPrivateRedis<Value>(_ body: (PrivateRedis) async throws -> Value) async throws -> Value {
    let server = try await PrivateRedis.start()
    defer { server.stop() }
    return try await body(server)
}

/// A live node on a redis-server of the test's own whose housekeeping moves only when the test steps the clock: no
/// other test's node sweeps its indexes, and a busy machine cannot move its time.
func withHeldNode<Value>(
    _ body: @Sendable (APIClient, PrivateRedis, ManualNodeClock) async throws -> Value
) async throws -> Value {
    let server = try await PrivateRedis.start()
    defer { server.stop() }
    let clock = ManualNodeClock()
    let configure: (inout ServerConfiguration) -> Void = { configuration in
        server.install(in: &configuration)
        clock.install(in: &configuration)
    }
    return try await withStatusd(.live, configure: configure) { api in try await body(api, server, clock) }
}

extension PrivateRedis {
    /// Runs `body` with a client of this server of its own (logging as `label`), running for the length of the call.
    func withClient<Value: Sendable>(_ label: String, _ body: (RedisClient) async throws -> Value) async throws -> Value {
        try await withRunningClient(configuration, label, body)
    }
}

/// Runs `body` with a client of the server `configuration` names (logging as `label`), running for the length of the
/// call.
func withRunningClient<Value: Sendable>(
    _ configuration: RedisConfiguration,
    _ label: String,
    _ body: (RedisClient) async throws -> Value
) async throws -> Value {
    let redis = RedisClient(configuration: configuration, logger: Logger(label: label))
    return try await withThrowingTaskGroup(of: Void.self) { service in
        service.addTask { try await redis.run() }
        defer { service.cancelAll() }
        return try await body(redis)
    }
}

/// Runs `body`, then closes `redis`, whether `body` threw or not.
func closing<Value>(_ redis: RedisClient, _ body: () async throws -> Value) async throws -> Value {
    do {
        let value = try await body()
        await redis.close()
        return value
    } catch {
        await redis.close()
        throw error
    }
}
