import NIOCore

/// One simulated device's connection: the only handler in its channel's pipeline, on the event loop the device is
/// pinned to. It writes the upgrade request, then reads WebSocket frames straight from the socket's buffers and scans
/// each text message once (``DeviceFrame``) to count what the loader measures into its loop's ``LoopStats``: every
/// status object of an `onUserStatusChanged` carrying one of the loader's changes is one delivery. Outbound requests
/// arrive through ``DeviceLink`` already on the loop.
final class DeviceHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum State {
        case handshaking
        case open
        /// The loader sent a close frame and waits (at most 2 s) for the server's.
        case closing
        case closed
    }

    /// Largest message accepted; a bigger one closes the connection.
    static let maxMessageBytes = 1 << 20

    private let device: Int
    private let user: Int
    private let node: Int
    private let first: Bool
    private let started: UInt64
    /// Set on a failover reconnect: when the device lost its connection (monotonic ns).
    private let lostAt: UInt64?
    /// Failed failover attempts before this one.
    private let attempt: Int
    private let watch: DeviceWatch?
    private let target: String
    private let host: String
    private let stats: LoopStats
    private let connector: DeviceConnector

    private var state = State.handshaking
    private var context: ChannelHandlerContext?
    private var unread: ByteBuffer?
    private var fragments: ByteBuffer?
    private var activated = false
    private var welcomed = false
    private var registered = false
    private var firstEnded = false
    private var dropRequested = false
    /// The code of the server's close frame, if one came.
    private var closeCode: UInt16?
    /// The `Retry-After` of a refused upgrade (503 from a busy node, 429), in ms.
    private var retryAfterMs: Int?
    private var closeTimer: Scheduled<Void>?
    /// Own devices also hear about `onlineDevices`-only changes, which repeat the version: those are not deliveries.
    private var lastOwnVersion: Int64 = -1

    init(
        device: Int,
        user: Int,
        node: Int,
        first: Bool,
        started: UInt64,
        lostAt: UInt64? = nil,
        attempt: Int = 0,
        target: String,
        host: String,
        stats: LoopStats,
        connector: DeviceConnector
    ) {
        self.device = device
        self.user = user
        self.node = node
        self.first = first
        self.started = started
        self.lostAt = lostAt
        self.attempt = attempt
        self.watch = connector.watch(device)
        self.target = target
        self.host = host
        self.stats = stats
        self.connector = connector
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        activated = true
        let request = WebSocketClientFrames.upgradeRequest(target: target, host: host, allocator: context.channel.allocator)
        context.writeAndFlush(wrapOutboundOut(request), promise: nil)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        state = .closed
        closeTimer?.cancel()
        closeTimer = nil
        unread = nil
        fragments = nil
        if registered { connector.registry.disconnected(device) }
        if !welcomed { stats.recordConnectFailure() }
        endFirstAttempt()
        connector.attemptEnded(
            device: device,
            node: node,
            welcomed: welcomed,
            dropRequested: dropRequested,
            closeCode: closeCode,
            retryAfterMs: retryAfterMs,
            lostAt: lostAt,
            attempt: attempt,
            stats: stats
        )
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        stats.reads &+= 1
        guard var buffer = unread.take() else {
            process(&incoming, context: context)
            keep(incoming)
            return
        }
        buffer.writeBuffer(&incoming)
        process(&buffer, context: context)
        keep(buffer)
    }

    /// Keeps the bytes of an incomplete frame for the next read.
    private func keep(_ buffer: ByteBuffer) {
        guard buffer.readableBytes > 0, state != .closed else { return }
        var rest = buffer
        rest.discardReadBytes()
        unread = rest
    }

    private func process(_ buffer: inout ByteBuffer, context: ChannelHandlerContext) {
        if state == .handshaking {
            guard let headerEnd = Self.endOfHTTPHeader(buffer) else {
                if buffer.readableBytes > 16_384 { fail(context) }
                return
            }
            let statusLine = buffer.getString(at: buffer.readerIndex, length: min(12, headerEnd)) ?? ""
            buffer.moveReaderIndex(forwardBy: headerEnd)
            guard statusLine == "HTTP/1.1 101" else {
                let code = statusLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                stats.recordRefusal(status: code)
                let head = buffer.getString(at: buffer.readerIndex - headerEnd, length: headerEnd) ?? ""
                retryAfterMs = Self.retryAfterMs(in: head)
                fail(context)
                return
            }
            state = .open
        }
        while state == .open || state == .closing, let header = WebSocketClientFrames.Header(buffer) {
            guard header.payloadLength <= Self.maxMessageBytes else {
                fail(context)
                return
            }
            let total = header.headerLength + header.payloadLength
            guard buffer.readableBytes >= total else { return }
            if header.mask == nil && header.fin && header.opcode == WebSocketClientFrames.Opcode.text.rawValue && fragments == nil {
                // The usual case: one unfragmented text frame, scanned where it lies in the read buffer.
                buffer.withUnsafeReadableBytes { bytes in
                    message(UnsafeRawBufferPointer(rebasing: bytes[header.headerLength..<total]), context: context)
                }
                buffer.moveReaderIndex(forwardBy: total)
                continue
            }
            var payload = buffer.getSlice(at: buffer.readerIndex + header.headerLength, length: header.payloadLength)!
            buffer.moveReaderIndex(forwardBy: total)
            if let key = header.mask {
                payload = ByteBuffer(bytes: payload.readableBytesView)
                WebSocketClientFrames.unmask(&payload, key: key)
            }
            control(header, payload: &payload, context: context)
        }
    }

    /// Fragments, binary frames and control frames.
    private func control(_ header: WebSocketClientFrames.Header, payload: inout ByteBuffer, context: ChannelHandlerContext) {
        switch WebSocketClientFrames.Opcode(rawValue: header.opcode) {
        case .text, .binary, .continuation:
            if header.opcode == WebSocketClientFrames.Opcode.continuation.rawValue {
                guard fragments != nil else { return }
                fragments!.writeBuffer(&payload)
            } else {
                fragments = payload
            }
            if fragments!.readableBytes > Self.maxMessageBytes {
                fail(context)
                return
            }
            guard header.fin, let whole = fragments.take() else { return }
            whole.withUnsafeReadableBytes { message($0, context: context) }
        case .close:
            if payload.readableBytes >= 2, let code = payload.getInteger(at: payload.readerIndex, as: UInt16.self) {
                closeCode = code
            }
            if state == .open {
                let code = payload.readableBytesView.prefix(2)
                let reply = WebSocketClientFrames.frame(.close, payload: code, allocator: context.channel.allocator)
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(reply)).whenComplete { _ in channel.close(promise: nil) }
                state = .closing
            } else {
                context.close(promise: nil)
            }
        case .ping:
            let pong = WebSocketClientFrames.frame(.pong, payload: payload.readableBytesView, allocator: context.channel.allocator)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong, nil:
            return
        }
    }

    /// One complete text message.
    private func message(_ bytes: UnsafeRawBufferPointer, context: ChannelHandlerContext) {
        var now: UInt64 = 0
        let frame = DeviceFrame.scan(bytes) { status in
            if status.user == user {
                guard status.version > lastOwnVersion else {
                    stats.recordOtherEvent()
                    return
                }
                lastOwnVersion = status.version
            } else if let watch {
                // A watcher counts each version once, however it came (event, resume or snapshot).
                if now == 0 { now = MonotonicClock.micros() }
                switch watch.observe(status, nowMicros: now, measuring: stats.measuring) {
                case .notNew:
                    stats.recordOtherEvent()
                    return
                case .new:
                    if status.type == .offline && stats.measuring { stats.recordOfflineShown() }
                case .flap(let micros):
                    if stats.measuring { stats.recordFlap(micros: micros) }
                }
                if let change = status.change { stats.recordFirstReceipt(micros: now &- change.sentMicros) }
            }
            guard let change = status.change else {
                stats.recordOtherEvent()
                return
            }
            if now == 0 { now = MonotonicClock.micros() }
            stats.recordDelivery(sequence: change.sequence, sentMicros: change.sentMicros, nowMicros: now, node: node)
        }
        switch frame {
        case .statusChanged, .other:
            return
        case .reply(let ok):
            stats.recordReply(ok: ok)
        case .welcome:
            guard !welcomed else { return }
            welcomed = true
            let welcomedAt = MonotonicClock.nanos()
            stats.recordConnect(nanos: welcomedAt &- started, first: first)
            if let lostAt { stats.recordReconnect(nanos: welcomedAt &- lostAt) }
            if let watch { watch.resume = DeviceFrame.resumeToken(bytes) ?? watch.resume }
            registered = connector.registry.connected(
                device,
                node: node,
                link: DeviceLink(handler: NIOLoopBound(self, eventLoop: context.eventLoop))
            )
            endFirstAttempt()
            if !registered { startClose() }
        case .kicked:
            context.close(promise: nil)
        }
    }

    /// Writes a request frame (a change); counted as a failed change when the connection is no longer open.
    func sendText(_ text: String) {
        guard state == .open, let context else {
            stats.recordReply(ok: false)
            return
        }
        let frame = WebSocketClientFrames.frame(.text, payload: text.utf8, allocator: context.channel.allocator)
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }

    /// The loader closes this connection (churn or the end of the run); the device reconnects unless the run stops.
    func drop() {
        dropRequested = true
        startClose()
    }

    /// Sends a close frame and closes the socket when the server answers, or after 2 s.
    private func startClose() {
        guard let context else { return }
        switch state {
        case .open:
            state = .closing
            let frame = WebSocketClientFrames.frame(.close, payload: [0x03, 0xE8], allocator: context.channel.allocator)
            context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
            let channel = context.channel
            closeTimer = context.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
        case .handshaking:
            context.close(promise: nil)
        case .closing, .closed:
            return
        }
    }

    private func fail(_ context: ChannelHandlerContext) {
        state = .closed
        context.close(promise: nil)
    }

    /// Tells the registry the device's first attempt is over (welcome or failure), once.
    private func endFirstAttempt() {
        guard first, !firstEnded else { return }
        firstEnded = true
        connector.registry.endFirstAttempt()
    }

    /// The length of the HTTP response header (through the blank line), or nil until it has arrived.
    /// The `Retry-After` header of a response head (whole seconds), in ms.
    static func retryAfterMs(in head: String) -> Int? {
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("retry-after:") {
            return Int(line.dropFirst("retry-after:".count).trimmingCharacters(in: .whitespaces)).map { $0 * 1000 }
        }
        return nil
    }

    private static func endOfHTTPHeader(_ buffer: ByteBuffer) -> Int? {
        buffer.withUnsafeReadableBytes { bytes -> Int? in
            guard bytes.count >= 4 else { return nil }
            for index in 3..<bytes.count
            where bytes[index] == 0x0A && bytes[index - 1] == 0x0D && bytes[index - 2] == 0x0A && bytes[index - 3] == 0x0D {
                return index + 1
            }
            return nil
        }
    }
}
