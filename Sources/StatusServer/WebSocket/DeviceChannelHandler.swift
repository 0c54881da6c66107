import NIOCore
import NIOWebSocket

/// The device socket after the upgrade: feeds what happens on the channel to its ``DeviceConnectionStateMachine`` and
/// carries out the actions it answers. It decides nothing itself.
///
/// Its pipeline is NIO's frame decoder and this handler, nothing else: every outbound buffer is an already encoded
/// WebSocket frame (``WebSocketWire``), so an event's frame is written to each recipient without a copy. Writes from
/// the fan-out are not flushed here; the fan-out flushes each handler once per batch (``flushIfNeeded()``).
final class DeviceChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var machine: DeviceConnectionStateMachine
    /// Strong (a weak reference would put every retain of the session on the slow side-table path, once per delivery);
    /// the cycle with the session's handler box is broken when the channel closes.
    private var session: DeviceSession?
    private let gateway: DeviceGateway
    private let closeGrace: TimeAmount
    /// The node's clock, which times the connection's rate limits.
    private let clock: any NodeClock
    private var context: ChannelHandlerContext?
    /// The upgrade answer is out; written first once the handler is in the pipeline.
    var welcome: DeviceGateway.OpeningFrames?
    private var pendingRead = false
    private var needsFlush = false
    private var closeDeadline: Scheduled<Void>?
    /// The versions written to this socket last: what a resume need not send again.
    private var delivered = RecentDeliveries()

    init(session: DeviceSession, gateway: DeviceGateway, limits: DeviceConnectionStateMachine.Limits) {
        self.session = session
        self.gateway = gateway
        self.closeGrace = .milliseconds(limits.closeGraceMs)
        self.clock = session.clock
        self.machine = DeviceConnectionStateMachine(limits: limits, nowMs: session.clock.monotonicMs)
    }

    // MARK: - From the fan-out and the node (on the channel's event loop)

    /// Writes an event without flushing; true when the caller must flush this handler.
    func deliver(_ event: StatusEvent) -> Bool {
        let now = clock.monotonicMs
        let action = machine.deliver(event, nowMs: now)
        if case .write = action { delivered.record(user: event.userKey, version: event.version, atMs: now) }
        perform(action)
        return needsFlush
    }

    /// Flushes what ``deliver(_:)`` wrote.
    func flushIfNeeded() {
        guard needsFlush, let context else { return }
        needsFlush = false
        context.flush()
    }

    /// Ends the session: `farewell` frames, a close frame, then the TCP connection closes.
    func end(_ reason: DeviceConnectionStateMachine.Ending, farewell: [ByteBuffer]) {
        perform(machine.end(reason, farewell: farewell))
    }

    /// The reply of the request that ran.
    func requestFinished(_ reply: ByteBuffer, closeAfter: Bool) {
        perform(machine.requestFinished(reply, closeAfter: closeAfter))
    }

    /// The channel closed (its close future fired): files the departure once.
    func channelClosed() {
        closeDeadline?.cancel()
        closeDeadline = nil
        perform(machine.channelClosed())
        context = nil
        session?.releaseHandler()
        session = nil
    }

    // MARK: - Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if !context.channel.isWritable { perform(machine.writabilityChanged(isWritable: false)) }
        if let welcome {
            self.welcome = nil
            let now = clock.monotonicMs
            for status in welcome.statuses { delivered.record(user: status.userKey, version: status.version, atMs: now) }
            perform(machine.attached(welcome: welcome.bytes, shown: welcome.statuses, nowMs: now))
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        session?.touch()
        let frame = unwrapInboundIn(data)
        perform(machine.received(Self.classify(frame), nowMs: clock.monotonicMs))
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        perform(machine.writabilityChanged(isWritable: context.channel.isWritable))
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The peer sent FIN without a close frame (half-closure is allowed on this server): it is gone.
        if let event = event as? ChannelEvent, event == .inputClosed {
            perform(machine.end(.disconnected, farewell: []))
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? NIOWebSocketError {
            perform(machine.decodingFailed(tooBig: error == .invalidFrameLength))
        } else {
            context.close(promise: nil)
        }
    }

    func read(context: ChannelHandlerContext) {
        if machine.wantsToRead {
            context.read()
        } else {
            pendingRead = true
        }
    }

    // MARK: - Actions

    private func perform(_ action: DeviceConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .write(let frame):
            guard let context else { break }
            context.write(wrapOutboundOut(frame), promise: nil)
            needsFlush = true
        case .writeAndFlush(let frames):
            guard let context else { break }
            for frame in frames { context.write(wrapOutboundOut(frame), promise: nil) }
            needsFlush = false
            context.flush()
        case .execute(let request):
            execute(request)
        case .replyAndExecute(let reply, let next):
            perform(.writeAndFlush([reply]))
            execute(next)
        case .refuse(let request, let error):
            if error.code == .rateLimited { session?.activity?.rateLimited.add(1, ordering: .relaxed) }
            perform(.writeAndFlush([WebSocketWire.text(gateway.requests.refusal(of: request, error))]))
        case .closeAfterWriting(let frames):
            closeAfterWriting(frames)
        case .closeNow:
            context?.close(promise: nil)
        case .fileDeparture(let ending):
            if let session { gateway.depart(session, because: ending, delivered: delivered) }
        }
        resumeReadingIfWanted()
    }

    private func closeAfterWriting(_ frames: [ByteBuffer]) {
        guard let context else { return }
        let written = context.eventLoop.makePromise(of: Void.self)
        for (position, frame) in frames.enumerated() {
            context.write(wrapOutboundOut(frame), promise: position == frames.count - 1 ? written : nil)
        }
        if frames.isEmpty { written.succeed() }
        needsFlush = false
        context.flush()
        // Closed once the frames are written, or after the grace period if the peer does not read.
        let channel = context.channel
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        closeDeadline = context.eventLoop.scheduleTask(in: closeGrace) { channel.close(promise: nil) }
    }

    private func execute(_ request: ByteBuffer) {
        guard let session, let eventLoop = context?.eventLoop else { return }
        gateway.execute(request, for: session, replyingTo: NIOLoopBound(self, eventLoop: eventLoop))
    }

    private func resumeReadingIfWanted() {
        guard pendingRead, machine.wantsToRead, let context else { return }
        pendingRead = false
        context.read()
    }

    /// What a frame from the decoder is to the state machine.
    private static func classify(_ frame: WebSocketFrame) -> DeviceConnectionStateMachine.Frame {
        guard frame.maskKey != nil else { return .malformed("client frames must be masked") }
        guard !frame.rsv1, !frame.rsv2, !frame.rsv3 else { return .malformed("reserved bits set") }
        switch frame.opcode {
        case .text: return .text(frame.unmaskedData, fin: frame.fin)
        case .binary: return .binary(fin: frame.fin)
        case .continuation: return .continuation(frame.unmaskedData, fin: frame.fin)
        case .ping: return .ping(frame.unmaskedData)
        case .pong: return .pong
        case .connectionClose: return .close(frame.unmaskedData)
        default: return .malformed("reserved opcode")
        }
    }
}
