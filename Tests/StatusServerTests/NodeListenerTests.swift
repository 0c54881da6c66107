import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Testing

@testable import StatusServer

/// The node's own accept loop (``NodeListener``) as the binary runs it. Every live test goes through it too
/// (``withLiveNode(_:_:)``); these check what only a stop shows.
@Suite(.redis) struct NodeListenerTests {
    /// A graceful shutdown closes the listening socket and tells the open HTTP connections to quiesce: an idle
    /// keep-alive connection is closed by the node, the port takes no connection any more, and the node's run returns
    /// (its HTTP connections' tasks ended).
    @Test(.timeLimit(.minutes(1))) func aGracefulShutdownStopsListeningAndClosesIdleConnections() async throws {
        var logger = Logger(label: "listener-test")
        logger.logLevel = .warning
        let configuration = ServerConfiguration(
            host: "127.0.0.1",
            port: 0,
            redis: try TestRedis.configuration,
            adminKey: "admin-" + UUID().uuidString
        )
        let node = try buildNode(configuration: configuration, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            let (group, port) = try await start(node, in: &tasks)
            let idle = try RawConnection(port: port)
            idle.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(await idle.readAvailable(timeout: .seconds(5)).hasPrefix("HTTP/1.1 200"))

            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            // Closed by the node: readable at once, and what it reads is the end of the stream.
            #expect(await idle.hasInput(within: 3000))
            #expect(await idle.readAvailable(timeout: .seconds(1)).isEmpty)
            #expect(throws: TestAppError.self) { try RawConnection(port: port) }
        }
    }
}
