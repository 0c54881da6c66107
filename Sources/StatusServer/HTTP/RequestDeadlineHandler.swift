import CoreMetrics
import NIOCore

/// Bounds each HTTP request of a connection in time and in bytes, counted from its first byte on the wire (SPEC §7: a
/// request arrives whole within 10 s, else 408; SPEC §1: 1 MiB bodies).
///
/// It sits at the very front of the pipeline, before NIO's HTTP decoder, because a request trickling in (a head or a
/// body sent a byte a second, a `Content-Length` larger than the body, a last chunk that never comes, bare CRLFs)
/// produces no HTTP part for the handlers behind the decoder to notice, and a chunk extension produces no part at all
/// however long it is. The decoder's side (``MalformedRequestHandler``) says when a request is complete, with
/// ``RequestComplete`` sent as an outbound user event; when the time or the byte budget runs out first, this handler
/// sends ``Expired`` inbound, for ``MalformedRequestHandler`` to answer (408 or 413, with the SPEC error body), and
/// closes the connection in any case. An idle connection, between requests, is the idle timeout's business.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    /// The request that was being read ran out of time or of bytes.
    enum Expired: Sendable {
        /// Not whole within the time limit: 408 `REQUEST_TIMEOUT`.
        case timeout
        /// More bytes on the wire than any request may have: 413 `PAYLOAD_TOO_LARGE`.
        case tooLarge
    }

    /// The request being read is complete (its end part was decoded).
    struct RequestComplete: Sendable {}

    /// A response already encoded, written as is (past NIO's response encoder, which would change it).
    struct WriteAsIs: Sendable {
        var bytes: ByteBuffer
    }

    /// The most bytes one request may take on the wire: its head (NIO's decoder allows 80 KiB), a body of
    /// ``RequestBody/maxBytes`` and the chunked framing around it (which a client may spread thin), with room to spare.
    /// A chunk extension, which NIO's decoder skips without a limit of its own, is bounded by this too.
    static let maxRequestBytes = 2 * RequestBody.maxBytes

    private let timeout: TimeAmount
    /// When the request being read sent its first byte; nil between requests.
    private var requestStart: NIODeadline?
    /// Bytes of the request being read.
    private var bytes = 0
    /// The check of the time limit. One per connection at most, not one per request: it is scheduled for the limit
    /// of the request being read and, when it fires after that request completed, moves on to the next one's limit
    /// (or stops), so a keep-alive connection of quick requests costs a clock read per request, not a timer.
    private var timer: Scheduled<Void>?
    /// A request expired: the connection is closing, and nothing more is read.
    private var expired = false

    /// Counts the requests closed for the timeout (the node's `statusd_request_timeouts_total`).
    private let timedOut: CoreMetrics.Counter?

    init(timeout: TimeAmount, timedOut: CoreMetrics.Counter? = nil) {
        self.timeout = timeout
        self.timedOut = timedOut
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !expired else { return }
        if requestStart == nil {
            let now = NIODeadline.now()
            requestStart = now
            bytes = 0
            if timer == nil { scheduleCheck(at: now + timeout, context: context) }
        }
        bytes += unwrapInboundIn(data).readableBytes
        guard bytes <= Self.maxRequestBytes else {
            expire(.tooLarge, context: context)
            return
        }
        context.fireChannelRead(data)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if let response = event as? WriteAsIs {
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(response.bytes)), promise: promise)
            return
        }
        guard event is RequestComplete else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        requestStart = nil
        promise?.succeed()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    private func scheduleCheck(at deadline: NIODeadline, context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.check(context: context)
        }
    }

    private func check(context: ChannelHandlerContext) {
        timer = nil
        guard let requestStart, !expired else { return }
        let due = requestStart + timeout
        if NIODeadline.now() >= due {
            expire(.timeout, context: context)
        } else {
            scheduleCheck(at: due, context: context)
        }
    }

    private func expire(_ reason: Expired, context: ChannelHandlerContext) {
        guard !expired, context.channel.isActive else { return }
        expired = true
        if reason == .timeout { timedOut?.increment() }
        timer?.cancel()
        timer = nil
        context.fireUserInboundEventTriggered(reason)
        // Nothing answered (the handler behind the decoder is gone once a WebSocket upgrade was asked for): just close.
        if context.channel.isActive { context.close(promise: nil) }
    }
}
