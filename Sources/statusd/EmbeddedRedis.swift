import Foundation
import Logging
import RedisClient

/// The private `redis-server` statusd starts when no Redis URL is given: on a unix socket only (no TCP port), with
/// its data (AOF on) in the data directory, stopped when statusd exits.
final class EmbeddedRedis: Sendable {
    let socketPath: String
    private let process: Process

    private init(socketPath: String, process: Process) {
        self.socketPath = socketPath
        self.process = process
    }

    /// Starts `redis-server` and waits (up to 10 s) until its socket exists.
    static func start(dataDirectory: String, logger: Logger) async throws -> EmbeddedRedis {
        let directory = URL(fileURLWithPath: dataDirectory).standardizedFileURL
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("redis.sock").path
        try? FileManager.default.removeItem(atPath: socket)
        guard
            let binary = ["/usr/bin/redis-server", "/usr/local/bin/redis-server", "/opt/homebrew/bin/redis-server"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw EmbeddedRedisError(message: "redis-server not found: install it (apt-get install redis-server) or pass --redis-url")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "--port", "0", "--unixsocket", socket, "--unixsocketperm", "700", "--dir", directory.path,
            "--appendonly", "yes", "--save", "", "--daemonize", "no", "--loglevel", "warning",
            // Subscription lists and reverse indexes of up to 256 users in the compact listpack encoding (as in
            // deploy/redis.conf; docs/scaling.md has the memory figures).
            "--zset-max-listpack-entries", "256", "--zset-max-listpack-value", "128",
        ]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        logger.info("started private redis-server", metadata: ["socket": "\(socket)", "pid": "\(process.processIdentifier)"])
        for _ in 0..<200 {
            if FileManager.default.fileExists(atPath: socket) { return EmbeddedRedis(socketPath: socket, process: process) }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.terminate()
        throw EmbeddedRedisError(message: "private redis-server did not start")
    }

    /// Stops the child with `SHUTDOWN` (Redis flushes its AOF on the way out); SIGKILL if it is still there after 5 s.
    /// (A child started by `Process` may inherit a signal mask that blocks SIGTERM, so the command is the reliable way.)
    func stop(logger: Logger) async {
        guard process.isRunning else { return }
        let client = RedisClient(configuration: RedisConfiguration(endpoint: .unixSocket(path: socketPath)), logger: logger)
        _ = try? await client.send("SHUTDOWN")
        await client.close()
        for _ in 0..<100 where process.isRunning {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// The private Redis could not be started.
struct EmbeddedRedisError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
