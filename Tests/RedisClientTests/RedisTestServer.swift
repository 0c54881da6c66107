import Foundation
import Logging
import NIOCore
import NIOPosix

@testable import RedisClient

/// A private `redis-server` child process for integration tests, on a free port, without persistence.
final class RedisTestServer: @unchecked Sendable {
    // @unchecked: `process` is only touched by the test that owns the server, one call at a time.
    let port: Int
    let extraArguments: [String]
    private var process: Process?

    var url: String {
        "redis://127.0.0.1:\(self.port)"
    }

    private init(port: Int, extraArguments: [String]) {
        self.port = port
        self.extraArguments = extraArguments
    }

    /// Starts a server on a free port and waits until it accepts connections.
    static func start(extraArguments: [String] = []) async throws -> RedisTestServer {
        let server = RedisTestServer(port: try await freePort(), extraArguments: extraArguments)
        try await server.start()
        return server
    }

    /// Starts (or restarts) the server on its port.
    func start() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments =
            [
                "--port", "\(self.port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no",
            ] + self.extraArguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if await Self.canConnect(port: self.port) {
                return
            }
            guard process.isRunning else {
                throw TestServerError(message: "redis-server exited at start (port \(self.port))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestServerError(message: "redis-server did not start listening on port \(self.port)")
    }

    /// Stops the server's process (`SIGSTOP`) and closes nothing: its connections stay open and silent, as across a
    /// network that drops every packet. ``resume()`` lets it go on; ``stop()`` ends it paused or not.
    func pause() {
        if let process = self.process { kill(process.processIdentifier, SIGSTOP) }
    }

    /// Lets a paused server go on (`SIGCONT`).
    func resume() {
        if let process = self.process { kill(process.processIdentifier, SIGCONT) }
    }

    /// Stops the server and waits for it to exit.
    func stop() async {
        guard let process = self.process else {
            return
        }
        self.process = nil
        // SIGKILL, not terminate(): a child started by Foundation's Process here inherits a signal mask that blocks
        // SIGTERM, so redis-server would never see it. Without persistence there is nothing to lose.
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning {
            do {
                try await Task.sleep(for: .milliseconds(5))
            } catch {
                usleep(5_000)  // cancelled: keep waiting, without spinning
            }
        }
    }

    private static func canConnect(port: Int) async -> Bool {
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
            try? await channel.close()
            return true
        } catch {
            return false
        }
    }

    /// A TCP port nothing listens on (bound and released at once).
    static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let port = channel.localAddress?.port ?? 0
        try await channel.close()
        return port
    }
}

struct TestServerError: Error {
    let message: String
}

/// Runs `body` against the server named by `STATUSD_TEST_REDIS_URL`, or else against a private server started for it.
func withRedisURL(_ body: (String) async throws -> Void) async throws {
    if let url = ProcessInfo.processInfo.environment["STATUSD_TEST_REDIS_URL"], !url.isEmpty {
        try await body(url)
        return
    }
    try await withPrivateRedisServer { try await body($0.url) }
}

/// Runs `body` against a private server that the test may stop, restart or disrupt.
func withPrivateRedisServer(extraArguments: [String] = [], _ body: (RedisTestServer) async throws -> Void) async throws {
    let server = try await RedisTestServer.start(extraArguments: extraArguments)
    do {
        try await body(server)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}

/// Makes a client for `url` with the default configuration, runs `body`, then closes the client.
func withTestClient(url: String, _ body: (RedisClient) async throws -> Void) async throws {
    try await withConfiguredClient(try RedisConfiguration(url: url), body)
}

/// Makes a client with `configuration`, runs `body`, then closes the client.
func withConfiguredClient(_ configuration: RedisConfiguration, _ body: (RedisClient) async throws -> Void) async throws {
    let client = RedisClient(configuration: configuration, logger: testLogger)
    do {
        try await body(client)
    } catch {
        await client.close()
        throw error
    }
    await client.close()
}

/// The configuration for `url`, adjusted by `configure`.
func testConfiguration(_ url: String, _ configure: (inout RedisConfiguration) -> Void) throws -> RedisConfiguration {
    var configuration = try RedisConfiguration(url: url)
    configure(&configuration)
    return configuration
}

let testLogger: Logger = {
    var logger = Logger(label: "RedisClientTests")
    logger.logLevel = ProcessInfo.processInfo.environment["REDIS_TEST_LOG"] == nil ? .critical : .trace
    return logger
}()

/// A unique key prefix, so that tests running in parallel on one server never share keys. It is a hash tag, so keys
/// made by appending to it share one slot (multi-key commands on them are valid on a cluster too).
/// A script that sets both its keys to its argument and answers 2: given keys of two hash slots, a command across slots.
let setBothKeysScript = RedisScript(
    name: "two-slots",
    source: "redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[1]); return 2"
)

func uniqueKey(_ name: String) -> String {
    "test:{\(name):\(UInt64.random(in: 0...UInt64.max))}"
}

/// A value shared between a test and callbacks on other threads: the client's own lock box.
typealias TestBox = LockedValue

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
func eventually(within timeout: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() {
            return true
        }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}
