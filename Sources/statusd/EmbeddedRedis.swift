import Foundation
import Logging

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

    /// Stops the child (SIGTERM; Redis flushes its AOF on the way out).
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

/// The private Redis could not be started.
struct EmbeddedRedisError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
