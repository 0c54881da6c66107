import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

// The floor under a device connect, for scripts/bench-connect (BENCH_CONNECT_FLOOR=1): a bare swift-nio server that
// upgrades any request to a WebSocket with the same typed upgrade handler statusd's server uses, sends one text frame
// of a welcome's size, and answers a close frame with a close frame. No token, no Redis, no session, no fan-out: what
// a connect+disconnect cycle costs below statusd's own work, on the same machine and driver (churn_client.c). statusd's
// µs per cycle less this one is what statusd itself spends.
//
// usage: connectfloor PORT [tasks|affine|loops]
//   tasks (default): accepted connections handed to a task each, as Hummingbird's server does;
//   affine: the same tasks, each run on the event loop that resumes it (as statusd runs its tasks,
//           LoopAffineTaskExecutor);
//   loops: the pipeline set up in the channel initializer, no task (as statusd's own listener does, NodeListener);
//   raw: no HTTP pipeline and no upgrade handler: one handler finds the request's end and its Sec-WebSocket-Key in the
//        bytes, writes the 101 and the welcome in one write, and answers the close frame: what a connect would cost
//        with an upgrade path of statusd's own instead of swift-nio's HTTP codec and typed upgrader.

/// A frame of a few hundred bytes, as statusd's welcome to a device without subscriptions, so that the writes cost alike.
let welcome = ByteBuffer(string: String(repeating: "w", count: 320))

/// Sends the welcome once upgraded; answers a close frame with a close frame, then closes.
final class FloorSession: ChannelInboundHandler, Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    func handlerAdded(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: welcome)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.opcode == .connectionClose else { return }
        var payload = frame.unmaskedData
        let code = payload.readSlice(length: 2) ?? ByteBuffer()
        let reply = WebSocketFrame(fin: true, opcode: .connectionClose, data: code)
        context.writeAndFlush(wrapOutboundOut(reply)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}

/// The `raw` mode's whole connection: the upgrade request's bytes, then WebSocket frames (only the close is answered).
final class RawUpgrade: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var pending = ByteBuffer()
    private var upgraded = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        pending.writeBuffer(&bytes)
        if !upgraded {
            let view = pending.readableBytesView
            guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
            let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
            pending.moveReaderIndex(forwardBy: end.upperBound - view.startIndex)
            guard let line = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("sec-websocket-key:") })
            else {
                context.close(promise: nil)
                return
            }
            let key = line.dropFirst("sec-websocket-key:".count).trimmingCharacters(in: .whitespaces)
            let digest = Insecure.SHA1.hash(data: Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))
            var out = context.channel.allocator.buffer(capacity: 512)
            out.writeString(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\nSec-WebSocket-Accept: "
                    + Data(digest).base64EncodedString() + "\r\n\r\n"
            )
            out.writeBytes([0x81, 126, UInt8(welcome.readableBytes >> 8), UInt8(welcome.readableBytes & 0xff)])
            out.writeImmutableBuffer(welcome)
            context.writeAndFlush(wrapOutboundOut(out), promise: nil)
            upgraded = true
        }
        // A masked client frame: opcode, length (short frames only here), mask, payload.
        guard pending.readableBytes >= 2, let first = pending.getInteger(at: pending.readerIndex, as: UInt8.self),
            let second = pending.getInteger(at: pending.readerIndex + 1, as: UInt8.self)
        else { return }
        let length = Int(second & 0x7f)
        guard length < 126, pending.readableBytes >= 6 + length else { return }
        if first & 0x0f == 0x8, length >= 2, let mask = pending.getBytes(at: pending.readerIndex + 2, length: 4),
            let payload = pending.getBytes(at: pending.readerIndex + 6, length: 2)
        {
            var out = context.channel.allocator.buffer(capacity: 4)
            out.writeBytes([0x88, 2, payload[0] ^ mask[0], payload[1] ^ mask[1]])
            context.writeAndFlush(wrapOutboundOut(out)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
        pending.moveReaderIndex(forwardBy: 6 + length)
    }
}

guard CommandLine.arguments.count >= 2, let port = Int(CommandLine.arguments[1]) else {
    print("usage: connectfloor PORT [tasks|loops]")
    exit(2)
}
let mode = CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : "tasks"

/// The typed upgrade pipeline, as statusd's server channel sets it up.
@Sendable func upgradablePipeline(_ channel: any Channel) -> EventLoopFuture<EventLoopFuture<Bool>> {
    channel.eventLoop.makeCompletedFuture {
        let upgrader = NIOTypedWebSocketServerUpgrader<Bool>(
            shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(FloorSession())
                    return true
                }
            }
        )
        let configuration = NIOUpgradableHTTPServerPipelineConfiguration(
            upgradeConfiguration: .init(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        _ = channel.close()
                        return false
                    }
                }
            )
        )
        return try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
    }
}

let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .serverChannelOption(.backlog, value: 4096)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
if mode == "raw" {
    let server = try await bootstrap.childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(RawUpgrade()) }
    }.bind(host: "127.0.0.1", port: port).get()
    print("connectfloor listening on \(port), \(mode)")
    try await server.closeFuture.get()
} else if mode == "loops" {
    // Everything on the event loops: the channel initializer sets the pipeline up, nothing awaits the upgrade.
    let server = try await bootstrap.childChannelInitializer { channel in
        upgradablePipeline(channel).map { _ in }
    }.bind(host: "127.0.0.1", port: port).get()
    print("connectfloor listening on \(port), \(mode)")
    try await server.closeFuture.get()
} else if mode == "affine" {
    // As Hummingbird's server does, with the tasks run on the loop that resumes them (as statusd's binary runs them).
    let server = try await bootstrap.bind(host: "127.0.0.1", port: port) { upgradablePipeline($0) }
    print("connectfloor listening on \(port), \(mode)")
    try await withTaskExecutorPreference(AffineExecutor()) {
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { upgrades in
                for try await upgrade in upgrades {
                    group.addTask { _ = try? await upgrade.get() }
                }
            }
        }
    }
} else {
    // As Hummingbird's server does: accepted connections come as an async sequence, each awaited by a task of its own.
    let server = try await bootstrap.bind(host: "127.0.0.1", port: port) { upgradablePipeline($0) }
    print("connectfloor listening on \(port), \(mode)")
    try await withThrowingDiscardingTaskGroup { group in
        try await server.executeThenClose { upgrades in
            for try await upgrade in upgrades {
                group.addTask { _ = try? await upgrade.get() }
            }
        }
    }
}

/// Runs a job on the event loop of the thread that enqueues it (the first loop from any other thread).
final class AffineExecutor: TaskExecutor, Sendable {
    let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let current = MultiThreadedEventLoopGroup.currentEventLoop
        let loop = loops.first { $0 === current } ?? loops[0]
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
