import NIOCore
import NIOHTTP1

/// A device's WebSocket upgrade without NIO's HTTP codec: the first handler of every connection reads its first bytes,
/// and a plain, well-formed upgrade of the device path (``DeviceUpgradeHead``) is admitted by ``DeviceGateway``,
/// answered `101` (or the SPEC error of a refusal) in bytes written here, and the channel left with the frame decoder
/// and the session's handler. Everything else (any other request, an upgrade with anything unusual about it) goes to
/// NIO's HTTP codec and typed upgrader as before (`toHTTP`), with the bytes read so far.
///
/// Why: a connect through NIO's codec adds an HTTP decoder, a response encoder, an upgrade handler and the request
/// hygiene handler to the pipeline, runs the head through them, then removes them all again, with a chain of futures
/// between. `connectfloor` prices that at 50–70 µs of a 300 µs cycle (`scripts/bench-connect` with
/// `BENCH_CONNECT_FLOOR=1`, its `loops` row against its `raw` row), on the path every reconnect storm takes.
final class DeviceUpgradeSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// What the sniffer hands over or reports, set by ``DeviceServerChannel``.
    struct Wiring {
        let gateway: DeviceGateway
        /// The head size and header count NIO's decoder allows (``DeviceUpgradeHead/parse(_:maxBytes:maxFields:)``).
        let maxHeadBytes: Int
        let maxHeaderFields: Int
        /// Sets the channel up for NIO's HTTP codec, after this handler.
        let toHTTP: (any Channel) throws -> Void
        /// The upgrade went to the gateway: the connection is a device's.
        let handedOver: () -> Void
        /// The upgrade was answered (accepted or refused): the request's deadline no longer applies.
        let answered: () -> Void
    }

    /// Bytes a client may send after its upgrade request, before it is answered, that are kept for its session.
    static let maxEarlyBytes = 64 * 1024

    private let wiring: Wiring
    private var buffered: ByteBuffer?
    private var admitting = false

    init(_ wiring: Wiring) {
        self.wiring = wiring
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if buffered == nil {
            buffered = bytes
        } else {
            buffered!.writeBuffer(&bytes)
        }
        if admitting {
            if buffered!.readableBytes > Self.maxEarlyBytes { context.close(promise: nil) }
            return
        }
        let parse = DeviceUpgradeHead.parse(
            buffered!,
            maxBytes: wiring.maxHeadBytes,
            maxFields: wiring.maxHeaderFields
        )
        switch parse {
        case .needMore:
            return
        case .elsewhere:
            handOverToHTTP(context: context)
        case .upgrade(let head, let length):
            buffered!.moveReaderIndex(forwardBy: length)
            admitting = true
            admit(head, context: context)
        }
    }

    /// A request still incomplete when its time ran out (``RequestDeadlineHandler/Expired``) goes to NIO's codec with
    /// the event, so that it is answered 408 (or 413) with the SPEC error body as any other request is
    /// (``MalformedRequestHandler``). One being admitted is closed, as on NIO's path.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard !admitting, event is RequestDeadlineHandler.Expired else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        handOverToHTTP(context: context, then: event)
    }

    /// NIO's HTTP codec takes the connection from its first byte (then hears `event`, if one is given).
    private func handOverToHTTP(context: ChannelHandlerContext, then event: Any? = nil) {
        do {
            try wiring.toHTTP(context.channel)
        } catch {
            context.close(promise: nil)
            return
        }
        let bytes = buffered
        buffered = nil
        // Passed on before leaving: a handler taken out of the pipeline has no next one to pass to.
        if let bytes { context.fireChannelRead(wrapInboundOut(bytes)) }
        if let event { context.fireUserInboundEventTriggered(event) }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func admit(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let admitted = wiring.gateway.admit(head, channel: context.channel)
        wiring.handedOver()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        admitted.whenComplete { result in
            let (sniffer, context) = bound.value
            sniffer.answer(result, head: head, context: context)
        }
    }

    private func answer(_ result: Result<DeviceGateway.Admission, any Error>, head: HTTPRequestHead, context: ChannelHandlerContext) {
        wiring.answered()
        switch result {
        case .success(.accepted(let session, let welcome)):
            var answer = context.channel.allocator.buffer(capacity: 160)
            answer.writeString(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\nSec-WebSocket-Accept: "
            )
            DeviceUpgrader.writeAccept(head, into: &answer)
            answer.writeString("\r\n\r\n")
            context.write(wrapOutboundOut(answer), promise: nil)
            do {
                try DeviceUpgrader.installSession(
                    session,
                    welcome: welcome,
                    in: context.channel,
                    maxFrameSize: wiring.gateway.limits.maxMessageBytes,
                    after: self
                )
            } catch {
                context.close(promise: nil)
                return
            }
            context.flush()
            // What the client sent after its request (frames) goes to the session; the sniffer leaves.
            let early = buffered
            buffered = nil
            if let early, early.readableBytes > 0 {
                context.fireChannelRead(wrapInboundOut(early))
                context.fireChannelReadComplete()
            }
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        case .success(.refused(let error)):
            let written = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(DeviceServerChannel.refusalBytes(error)), promise: written)
            let channel = context.channel
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        case .failure:
            context.close(promise: nil)
        }
    }
}
