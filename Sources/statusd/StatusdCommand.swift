import ArgumentParser
import Foundation
import Hummingbird
import Logging
import RedisClient
import ServiceLifecycle
import StatusServer

/// `statusd`: runs one node of the user status service.
@main
struct StatusdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "statusd",
        abstract: "Self-hosted user status service: presence, custom status, subscriptions and status events."
    )

    @Option(help: "Address to listen on (env STATUSD_HOST).")
    var host: String = ProcessInfo.processInfo.environment["STATUSD_HOST"] ?? "127.0.0.1"

    @Option(help: "Port to listen on (env STATUSD_PORT).")
    var port: Int = Int(ProcessInfo.processInfo.environment["STATUSD_PORT"] ?? "") ?? 8080

    @Option(
        help:
            "Redis URL, redis://[:password@]host:port[/db] or unix:///path (env STATUSD_REDIS_URL). Without it statusd starts a private redis-server."
    )
    var redisUrl: String?

    @Option(help: "Admin API key, at least 16 bytes (env STATUSD_ADMIN_KEY); generated and logged when absent.")
    var adminKey: String?

    @Option(help: "This node's id (env STATUSD_NODE_ID); random when absent.")
    var nodeId: String?

    @Option(help: "Seconds a node's lease lasts; survivors file a silent node's devices after it (env STATUSD_LEASE_SECONDS).")
    var leaseSeconds: Int = Int(ProcessInfo.processInfo.environment["STATUSD_LEASE_SECONDS"] ?? "") ?? 15

    @Option(help: "Data directory of the private redis-server (env STATUSD_DATA_DIR).")
    var dataDir: String = ProcessInfo.processInfo.environment["STATUSD_DATA_DIR"] ?? "./statusd-data"

    @Option(help: "Seconds over which a node asked to stop closes its device sockets (1012), not ready meanwhile (env STATUSD_DRAIN_SECONDS).")
    var drainSeconds: Double = Double(ProcessInfo.processInfo.environment["STATUSD_DRAIN_SECONDS"] ?? "") ?? 10

    @Option(
        help: """
            Device upgrades queued or connecting past which a new one is refused at once with 503 and Retry-After, \
            however fast the node connects; below it, as many as the node connects in 5 s (env \
            STATUSD_MAX_PENDING_CONNECTS).
            """
    )
    var maxPendingConnects: Int = Int(ProcessInfo.processInfo.environment["STATUSD_MAX_PENDING_CONNECTS"] ?? "") ?? 8_192

    @Option(
        help: """
            Device connects run at the same time: more absorb a reconnect storm sooner, fewer keep the deliveries to \
            the devices already connected on time meanwhile (env STATUSD_CONNECT_CONCURRENCY).
            """
    )
    var connectConcurrency: Int = Int(ProcessInfo.processInfo.environment["STATUSD_CONNECT_CONCURRENCY"] ?? "") ?? 96

    @Option(
        help: """
            Connections the kernel holds for the node before it accepts them (capped by net.core.somaxconn): a full \
            backlog drops connects, which clients retry only after a second or more (env STATUSD_LISTEN_BACKLOG).
            """
    )
    var listenBacklog: Int = Int(ProcessInfo.processInfo.environment["STATUSD_LISTEN_BACKLOG"] ?? "") ?? 4096

    @Option(
        help: """
            Port of an operator listener serving /metrics without credentials (env STATUSD_METRICS_PORT; the public \
            /metrics asks for the admin key).
            """
    )
    var metricsPort: Int? = ProcessInfo.processInfo.environment["STATUSD_METRICS_PORT"].flatMap { Int($0) }

    @Option(help: "Address of the operator listener (env STATUSD_METRICS_HOST).")
    var metricsHost: String = ProcessInfo.processInfo.environment["STATUSD_METRICS_HOST"] ?? "127.0.0.1"

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (env STATUSD_LOG_LEVEL).")
    var logLevel: String = ProcessInfo.processInfo.environment["STATUSD_LOG_LEVEL"] ?? "info"

    func run() async throws {
        var logger = Logger(label: "statusd")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let environment = ProcessInfo.processInfo.environment
        let adminKey = adminKey ?? environment["STATUSD_ADMIN_KEY"]
        let redisUrl = redisUrl ?? environment["STATUSD_REDIS_URL"]
        let nodeId = nodeId ?? environment["STATUSD_NODE_ID"]
        if let adminKey, let problem = AdminKeyPolicy.problem(with: adminKey) {
            // Refused before anything starts: a node with a guessable admin key must never serve.
            FileHandle.standardError.write(Data("statusd: refusing to start: \(problem)\n".utf8))
            throw ExitCode(78)
        }
        let key = adminKey ?? Self.generatedKey()
        var embedded: EmbeddedRedis?
        let redis: RedisConfiguration
        if let redisUrl {
            redis = try RedisConfiguration(url: redisUrl)
        } else {
            let child = try await EmbeddedRedis.start(dataDirectory: dataDir, logger: logger)
            embedded = child
            redis = RedisConfiguration(endpoint: .unixSocket(path: child.socketPath))
        }
        var configuration = ServerConfiguration(host: host, port: port, redis: redis, adminKey: key)
        if let nodeId { configuration.nodeId = nodeId }
        configuration.nodeLeaseSeconds = max(2, leaseSeconds)
        configuration.metricsPort = metricsPort
        configuration.metricsHost = metricsHost
        configuration.maxPendingConnects = max(1, maxPendingConnects)
        configuration.connectConcurrency = max(1, connectConcurrency)
        configuration.listenBacklog = max(1, listenBacklog)
        configuration.drain = NodeDrain(duration: .milliseconds(Int64(max(0, drainSeconds) * 1000)))
        if adminKey == nil {
            // Logged, not printed: stdout is block-buffered under systemd and Docker, so a print could stay unseen; and
            // logged whatever the log level, since without it the admin API cannot be used.
            var announcer = logger
            announcer.logLevel = .notice
            announcer.notice("statusd admin key: \(key)", metadata: ["generated": "true"])
        }
        logger.info("starting statusd", metadata: ["node": "\(configuration.nodeId)", "address": "\(host):\(port)"])
        do {
            let app = try buildApplication(configuration: configuration, logger: logger)
            // The drain after the application: a service group stops its services in reverse order, so on SIGTERM the
            // node drains first (not ready, device sockets closed with 1012 over the drain time), then stops.
            var groupConfiguration = ServiceGroupConfiguration(
                services: [app, NodeDrainService(drain: configuration.drain)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
            // A stop takes the drain and a bound, no longer, however busy the machine (NodeDrain.stopBound).
            groupConfiguration.maximumGracefulShutdownDuration = configuration.drain.stopBound
            let group = ServiceGroup(configuration: groupConfiguration)
            // The node's own tasks run on the event loop that resumes them, not on the global pool.
            try await withNodeTaskExecutor { try await group.run() }
        } catch {
            await embedded?.stop(logger: logger)
            throw error
        }
        await embedded?.stop(logger: logger)
    }

    private static func generatedKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return "adm_" + (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
