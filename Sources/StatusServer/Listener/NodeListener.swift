import HummingbirdCore
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle

/// The node's own accept loop, as the binary runs it (``StatusNode``): every accepted connection is set up on its event
/// loop by ``DeviceServerChannel``, and only those that turn out to be plain HTTP are handed to a task, which serves
/// their requests (Hummingbird's HTTP handling, `handleHTTP`). A device connection never has a task: its upgrade goes
/// to the gateway from the loop, and the session's channel handler owns it from there.
///
/// Why: Hummingbird's server passes every accepted connection through an async sequence to a task of its own, which for
/// a device only waits for the upgrade to be handed over and ends. Under a bare server (`connectfloor`, in
/// scripts/bench-connect) that task costs 55–95 µs of a connect+disconnect cycle even on the event loops; in statusd,
/// a cycle costs about 8 % less without it at 1,000 cycles/s, and the same at the churn limit, where a busy loop runs
/// the task in a turn it takes anyway (docs/benchmarks.md).
///
/// What Hummingbird's server does for a connection is kept: the listen backlog and `SO_REUSEADDR`, remote half-closure,
/// the backoff on `EMFILE` (NIO's accept handler), and the graceful shutdown: the listening socket closes and every
/// connection is told to quiesce (`ServerQuiescingHelper`: an HTTP connection closes once its request in flight is
/// answered), and the service returns when the HTTP connections' tasks have ended. Device sockets are closed by the
/// node's drain before that (``NodeDrain``).
///
/// The live tests run their nodes with this listener too (`withLiveNode`); `NodeListenerTests` checks its graceful stop.
struct NodeListener: Service {
    let child: DeviceServerChannel
    let host: String
    let port: Int
    /// The listen backlog (`--listen-backlog`, carried by Hummingbird's application configuration; the kernel caps it
    /// at `net.core.somaxconn`).
    let backlog: Int
    let group: any EventLoopGroup
    let logger: Logger
    /// Called with the listening socket once it is bound (its port, when the node asked for port 0).
    let onRunning: @Sendable (any Channel) async -> Void

    /// How many connections the listening socket accepts in one turn of its event loop. NIO's default is 4: with the
    /// loop busy serving devices a turn takes a millisecond or more, which capped accepts near 2,000–3,000 a second
    /// whatever the rest of the node could do; past that the kernel's listen queue filled, and every connect it then
    /// dropped was retried by the client's TCP after 1 s, 3 s, 7 s (the seconds-long connect p99 of the churn bench
    /// and the spread of a reconnect storm, docs/benchmarks.md). An accept and its pipeline cost microseconds, and what
    /// comes after is bounded by the upgrade admission (``UpgradeAdmission``: 503 with `Retry-After`), so a larger
    /// batch only moves the wait from the kernel's queue, where it is silent, to the node, where it is answered.
    static let acceptsPerTurn: UInt = 64

    /// How many plain HTTP connections may wait for their task to pick them up. A task starts in microseconds, so this
    /// bound is met only when the node's tasks cannot run at all; a connection past it is closed rather than held.
    static let waitingConnections = 256

    func run() async throws {
        let quiescing = ServerQuiescingHelper(group: group)
        let (connections, waiting) = AsyncStream.makeStream(
            of: DeviceServerChannel.Value.self,
            bufferingPolicy: .bufferingOldest(Self.waitingConnections)
        )
        let child = self.child
        let logger = self.logger
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: numericCast(backlog))
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.maxMessagesPerRead, value: Self.acceptsPerTurn)
            .serverChannelInitializer { server in
                server.eventLoop.makeCompletedFuture {
                    try server.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: server))
                }
            }
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { connection in
                child.setup(channel: connection, logger: logger).map { value in
                    value.outcome.whenSuccess { outcome in
                        guard case .http = outcome else { return }
                        guard case .enqueued = waiting.yield(value) else {
                            connection.close(promise: nil)
                            return
                        }
                    }
                }
            }
            .bind(host: host, port: port).get()
        // No connection is accepted after the listening socket closes: the sequence ends with it.
        server.closeFuture.whenComplete { _ in waiting.finish() }
        logger.info("statusd listening", metadata: ["address": "\(host):\(server.localAddress?.port ?? port)"])
        await onRunning(server)
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { tasks in
                for await connection in connections {
                    tasks.addTask { await child.handle(value: connection, logger: logger) }
                }
            }
        } onGracefulShutdown: {
            quiescing.initiateShutdown(promise: nil)
        }
        try? await server.close()
    }
}
