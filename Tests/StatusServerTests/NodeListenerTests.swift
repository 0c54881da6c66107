import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Testing

@testable import StatusServer

#if canImport(Glibc)
import Glibc
#endif

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

    /// A burst of connects that comes while the node cannot accept (its process stopped, as a long pause or a busy
    /// loop stops it) is held by the kernel for it, not dropped: the listen backlog (`--listen-backlog`, 4096 by
    /// default) takes them, where a backlog of 256 dropped every one past it and their clients retried only a second
    /// or more later. Once the node runs again it serves them all.
    @Test(.timeLimit(.minutes(1))) func aBurstOfConnectsToAStalledNodeIsHeldNotDropped() async throws {
        let nodeId = "burst-" + UUID().uuidString.prefix(8).lowercased()
        let node = try await ChildNode(adminKey: "admin-" + UUID().uuidString, nodeId: nodeId, leaseSeconds: 15)
        defer { node.crash() }
        let burst = 600
        // The kernel caps every backlog at net.core.somaxconn (4096 by default since Linux 5.4).
        let somaxconn = try? String(contentsOfFile: "/proc/sys/net/core/somaxconn", encoding: .utf8)
        let cap = Int(somaxconn?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        guard cap > burst else { throw TestAppError(message: "net.core.somaxconn is \(cap) on this host: no backlog can hold \(burst)") }
        node.pause()
        let sockets = try await onOwnThread { try ConnectBurst(port: node.port, count: burst) }
        defer { sockets.close() }
        let established = await onOwnThread { sockets.established(within: .seconds(2)) }
        node.resume()
        #expect(established == burst, "connects completed while the node was stopped")
        let answered = await onOwnThread { sockets.get("/healthz", within: .seconds(20)) }
        #expect(answered == burst, "connections served once the node ran again")
    }
}

/// Many non-blocking TCP connects to one port at once, as a reconnect storm makes them.
private final class ConnectBurst: Sendable {
    let descriptors: [Int32]

    init(port: Int, count: Int) throws {
        var descriptors: [Int32] = []
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else {
                for fd in descriptors { _ = Glibc.close(fd) }
                throw TestAppError(message: "no socket: errno \(errno)")
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            let started = connectLoopback(fd, port: port)
            descriptors.append(fd)
            guard started == 0 || errno == EINPROGRESS else {
                for fd in descriptors { _ = Glibc.close(fd) }
                throw TestAppError(message: "connect failed: errno \(errno)")
            }
        }
        self.descriptors = descriptors
    }

    /// How many of the connects have completed (the kernel answered the handshake) within `wait`.
    func established(within wait: Duration) -> Int {
        let deadline = ContinuousClock.now + wait
        var done = Set<Int32>()
        while done.count < descriptors.count && ContinuousClock.now < deadline {
            var polled = descriptors.filter { !done.contains($0) }.map { pollfd(fd: $0, events: Int16(POLLOUT), revents: 0) }
            _ = poll(&polled, nfds_t(polled.count), 50)
            for entry in polled where entry.revents & Int16(POLLOUT) != 0 {
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                if getsockopt(entry.fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0 { done.insert(entry.fd) }
            }
        }
        return done.count
    }

    /// Sends one GET on every connection; how many were answered `200` within `wait`.
    func get(_ path: String, within wait: Duration) -> Int {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        var pending = Set(descriptors.filter { fd in request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == request.count })
        var received: [Int32: [UInt8]] = [:]
        var answered = 0
        let deadline = ContinuousClock.now + wait
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !pending.isEmpty && ContinuousClock.now < deadline {
            var polled = pending.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            _ = poll(&polled, nfds_t(polled.count), 50)
            for entry in polled where entry.revents != 0 {
                let n = read(entry.fd, &buffer, buffer.count)
                if n > 0 { received[entry.fd, default: []] += buffer[0..<n] }
                let text = String(decoding: received[entry.fd] ?? [], as: UTF8.self)
                if text.hasPrefix("HTTP/1.1 200") && text.contains("\r\n\r\n") {
                    answered += 1
                    pending.remove(entry.fd)
                } else if n == 0 || (n < 0 && errno != EAGAIN) {
                    pending.remove(entry.fd)
                }
            }
        }
        return answered
    }

    func close() {
        for fd in descriptors { _ = Glibc.close(fd) }
    }
}
