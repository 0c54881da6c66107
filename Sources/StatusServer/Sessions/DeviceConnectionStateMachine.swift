import NIOCore
import StatusCore

/// The life of one device WebSocket, as a pure value: the channel handler feeds it what happened (an event to deliver,
/// a frame read, the socket's writability, a request answered, a reason to end) and does what it answers. No I/O,
/// no clock of its own, no locks: every rule about what a device receives, when it is cut off and how it closes is
/// decided here and unit-tested without a socket.
///
/// Rules it carries:
/// - events are written as they come while the socket keeps up; while it does not (not writable), their statuses wait
///   in a backlog bounded in bytes and go out as one coalesced `onUserStatusChanged` once it drains; past the bound
///   the device is cut off as too slow (SPEC §9: one slow device never slows the others);
/// - requests run one at a time per socket, in order; at most 50 a second with a burst of 100 (SPEC §7), the rest get
///   `RATE_LIMITED`; while requests wait or the socket is full, the handler stops reading;
/// - frames that break RFC 6455 (unmasked, invalid UTF-8 text, a bad fragment sequence) close with 1002 or 1007;
/// - every ending writes at most a few final frames and then closes the TCP connection: once those are written, or
///   after ``Limits/closeGraceMs`` whatever the peer does (the handler arms that deadline);
/// - the departure is filed exactly once, when the channel has closed, with the first reason the session ended for;
/// - a device never sees a version go back (SPEC §2, §10.5) across its opening frames: for ``openingFloorMs`` after the
///   welcome, an event of a user older than the status the opening frames showed of them (the welcome's own, a
///   resume's, a snapshot's) is not written, nor is one of the backlog waiting for the welcome. Such an event was read
///   or published before the frames were read, and reached the session after them: a node's resynchronisation after a
///   bus gap reads statuses while devices connect, and a change published just before a snapshot's read can be taken
///   off the bus just after it. (A user deleted and created again goes on from the deleted one's versions, so a floor
///   never holds back a successor's changes.)
struct DeviceConnectionStateMachine {
    /// Bounds of one connection.
    struct Limits: Sendable, Equatable {
        /// Bytes of statuses a device may have waiting before it is cut off as too slow.
        var backlogBytes = 256 * 1024
        /// Requests waiting behind the one that runs (reading pauses while any wait, so this holds at most one read).
        var queuedRequests = 128
        /// Largest request message (after reassembling fragments).
        var maxMessageBytes = 64 * 1024
        /// SPEC §7: 50 request frames per second per socket.
        var requestsPerSecond = 50
        /// SPEC §7: a burst of 100.
        var requestBurst = 100
        /// How long a closing socket may take to flush its last frames before the TCP connection is closed anyway.
        var closeGraceMs: Int64 = 2000
    }

    /// Why a session ended, which decides what its device becomes.
    enum Ending: Sendable, Equatable {
        /// The socket closed, dropped or broke the protocol: the device goes (offline if last).
        case disconnected
        /// Silent for longer than the app's heartbeat timeout.
        case timedOut
        /// Could not keep up with its events.
        case tooSlow
        /// Already removed in Redis (logout, kick, replaced, deleted): nothing more to file.
        case removed
        /// The node cannot reach Redis past its lease (SPEC §9): closed with 1013 so that the client reconnects through
        /// a healthy node; the device goes as by a dropped connection.
        case cutOff
        /// The node is stopping (SPEC §9): closed with 1012 so that the client reconnects at once, elsewhere; the
        /// device goes as by a dropped connection (an offline grace covers the move).
        case draining
    }

    /// A frame as read from the socket.
    enum Frame: Sendable, Equatable {
        case text(ByteBuffer, fin: Bool)
        case binary(fin: Bool)
        case continuation(ByteBuffer, fin: Bool)
        case ping(ByteBuffer)
        case pong
        /// A close frame and its payload (a code and a reason, or nothing).
        case close(ByteBuffer)
        /// A frame that breaks RFC 6455: no mask on a client frame (§5.1), reserved bits or opcodes (§5.2).
        case malformed(String)
    }

    /// What the handler must do.
    enum Action: Sendable, Equatable {
        case none
        /// Write without flushing (the fan-out flushes once per batch).
        case write(ByteBuffer)
        /// Write these frames and flush.
        case writeAndFlush([ByteBuffer])
        /// Run this request (a complete text message); ``requestFinished(_:closeAfter:)`` brings its reply.
        case execute(ByteBuffer)
        /// Write the reply, flush, and run the next queued request.
        case replyAndExecute(reply: ByteBuffer, next: ByteBuffer)
        /// Answer a request with an error without running it; `request` is the frame (for its `id`), if any.
        case refuse(request: ByteBuffer?, StatusError)
        /// Write these frames, flush, and close the channel once they are written or after the grace period.
        case closeAfterWriting([ByteBuffer])
        /// Close the channel at once, writing nothing more.
        case closeNow
        /// The channel has closed: file the device's departure for this reason.
        case fileDeparture(Ending)
    }

    private enum State: Equatable {
        /// Admitted and connected in Redis; the upgrade answer and the welcome are not written yet.
        case attaching
        case open
        /// Ending; the final frames are being written.
        case closing
        case closed
    }

    private var state: State = .attaching
    private let limits: Limits
    /// The first reason the session ended for.
    private(set) var ending: Ending?
    /// Frames to write when attaching, for a session ended before its welcome was written.
    private var farewell: [ByteBuffer] = []
    /// Statuses waiting for the socket to drain, oldest first.
    private var backlog: [(userKey: UInt64, version: Int64, status: ByteBuffer)] = []
    private var backlogBytes = 0
    /// The versions the opening frames showed, by user (``ResumePoint/userKey(_:)``), until `floorsUntilMs`; empty
    /// after.
    private var floors: [UInt64: Int64] = [:]
    private var floorsUntilMs: Int64 = 0
    /// How long after the welcome an older event of a user it showed is held back: longer than an event read or published
    /// before it takes to reach the session (a bus message's way through the node, a resynchronisation's read and
    /// delivery).
    static let openingFloorMs: Int64 = 2_000
    private var writable = true
    private var requestRunning = false
    private var queuedRequests: [ByteBuffer] = []
    /// A message being reassembled from fragments: its text so far, or nil for a binary one (refused, then skipped).
    private var fragments: ByteBuffer??
    private var limiter: RequestRateLimiter

    init(limits: Limits = Limits(), nowMs: Int64) {
        self.limits = limits
        self.limiter = RequestRateLimiter(ratePerSecond: limits.requestsPerSecond, burst: limits.requestBurst, nowMs: nowMs)
    }

    /// Whether the handler should read more from the socket: not while requests wait or the socket is full
    /// (backpressure reaches the peer through TCP instead of memory here). A closing socket reads on, to see the
    /// peer's answer to its close frame.
    var wantsToRead: Bool {
        (state == .open && writable && queuedRequests.isEmpty) || state == .closing
    }

    /// Whether the channel has closed.
    var isClosed: Bool { state == .closed }

    // MARK: - Events

    /// The upgrade is answered: write the welcome (the opening frames) and whatever arrived since the device was
    /// admitted, less the events older than what the opening frames showed of their user (`shown`, by
    /// ``ResumePoint/userKey(_:)``).
    mutating func attached(welcome: ByteBuffer, shown: [(userKey: UInt64, version: Int64)] = [], nowMs: Int64 = 0) -> Action {
        switch state {
        case .attaching:
            if ending != nil {
                state = .closing
                return .closeAfterWriting([welcome] + farewell)
            }
            state = .open
            if !shown.isEmpty {
                floors = Dictionary(shown, uniquingKeysWith: max)
                floorsUntilMs = nowMs + Self.openingFloorMs
                backlog.removeAll { $0.version < floors[$0.userKey, default: .min] }
                backlogBytes = backlog.reduce(0) { $0 + $1.status.readableBytes }
            }
            return .writeAndFlush([welcome] + takeBacklog())
        case .open, .closing, .closed:
            return .none
        }
    }

    /// A status event for this device, at `nowMs` (the session's monotonic clock).
    mutating func deliver(_ event: StatusEvent, nowMs: Int64 = 0) -> Action {
        if !floors.isEmpty {
            if nowMs >= floorsUntilMs {
                floors = [:]
            } else if event.version < floors[event.userKey, default: .min] {
                return .none
            }
        }
        switch state {
        case .open where writable && backlog.isEmpty:
            return .write(event.frame)
        case .open, .attaching:
            backlog.append((event.userKey, event.version, event.status))
            backlogBytes += event.status.readableBytes
            guard backlogBytes > limits.backlogBytes else { return .none }
            backlog = []
            backlogBytes = 0
            return end(.tooSlow, farewell: [])
        case .closing, .closed:
            return .none
        }
    }

    /// The socket's writability changed (NIO's write-buffer water marks).
    mutating func writabilityChanged(isWritable: Bool) -> Action {
        writable = isWritable
        guard isWritable, state == .open, !backlog.isEmpty else { return .none }
        return .writeAndFlush(takeBacklog())
    }

    /// A frame arrived (the handler has already counted it as a sign of life). `nowMs` feeds the request limit.
    mutating func received(_ frame: Frame, nowMs: Int64) -> Action {
        guard state == .open else {
            // The peer's answer to our close frame: nothing is left to wait for.
            if state == .closing, case .close = frame { return .closeNow }
            return .none
        }
        switch frame {
        case .malformed(let reason):
            return protocolError(reason)
        case .ping(let payload):
            return .writeAndFlush([WebSocketWire.frame(.pong, payload: payload)])
        case .pong:
            return .none
        case .close(let payload):
            // RFC 6455 §7.4: a code that may not be sent, or a reason that is not UTF-8, is answered as the protocol
            // error it is; a valid close is answered with its own code.
            if let problem = WebSocketWire.closeProblem(payload) {
                return end(.disconnected, farewell: [], close: WebSocketWire.close(problem, reason: "invalid close frame"))
            }
            return end(.disconnected, farewell: [], close: WebSocketWire.close(code: WebSocketWire.closeCode(payload)))
        case .binary(let fin):
            guard fragments == nil else { return protocolError("a new message began inside a fragmented one") }
            if !fin { fragments = .some(nil) }
            return .refuse(request: nil, StatusError(.invalidRequest, "binary frames are not supported"))
        case .text(let payload, let fin):
            guard fragments == nil else { return protocolError("a new message began inside a fragmented one") }
            if fin { return request(payload, nowMs: nowMs) }
            fragments = .some(payload)
            return tooBig(payload) ? messageTooBig() : .none
        case .continuation(let payload, let fin):
            guard let pending = fragments else { return protocolError("a continuation frame without a message") }
            guard var message = pending else {
                // The rest of a binary message, refused when it began.
                if fin { fragments = nil }
                return .none
            }
            message.writeImmutableBuffer(payload)
            guard !tooBig(message) else { return messageTooBig() }
            guard fin else {
                fragments = .some(message)
                return .none
            }
            fragments = nil
            return request(message, nowMs: nowMs)
        }
    }

    /// The frame decoder failed (bad length, fragmented control frame...): the protocol is broken.
    mutating func decodingFailed(tooBig: Bool) -> Action {
        guard state == .open else { return .none }
        return tooBig ? messageTooBig() : protocolError("malformed frame")
    }

    /// The running request was answered; `closeAfter` when it was a logout (already filed in Redis).
    mutating func requestFinished(_ reply: ByteBuffer, closeAfter: Bool) -> Action {
        requestRunning = false
        guard state == .open else {
            queuedRequests = []
            return .none
        }
        if closeAfter {
            queuedRequests = []
            return end(.removed, farewell: [reply])
        }
        guard !queuedRequests.isEmpty else { return .writeAndFlush([reply]) }
        requestRunning = true
        return .replyAndExecute(reply: reply, next: queuedRequests.removeFirst())
    }

    /// Ends the session for `reason` (the first reason wins), writing `farewell` (a `kicked` event, a logout reply)
    /// before the close frame. A device too slow to read is cut off at once.
    /// `close` replaces the reason's usual close frame (a protocol error names its own code).
    mutating func end(_ reason: Ending, farewell: [ByteBuffer], close: ByteBuffer? = nil) -> Action {
        guard ending == nil else { return .none }
        ending = reason
        let closeFrame = close ?? Self.closeFrame(for: reason)
        switch state {
        case .attaching:
            self.farewell = reason == .tooSlow ? [] : farewell + [closeFrame]
            return reason == .tooSlow ? .closeNow : .none
        case .open:
            state = .closing
            backlog = []
            backlogBytes = 0
            if reason == .tooSlow { return .closeNow }
            return .closeAfterWriting(farewell + [closeFrame])
        case .closing, .closed:
            return .none
        }
    }

    /// The channel closed (by either side, for any reason): the departure is filed once, with the first reason.
    mutating func channelClosed() -> Action {
        guard state != .closed else { return .none }
        state = .closed
        backlog = []
        queuedRequests = []
        fragments = nil
        let reason = ending ?? .disconnected
        ending = reason
        return .fileDeparture(reason)
    }

    // MARK: - Helpers

    private mutating func request(_ message: ByteBuffer, nowMs: Int64) -> Action {
        guard String(validating: message.readableBytesView, as: UTF8.self) != nil else {
            return end(.disconnected, farewell: [], close: WebSocketWire.close(.invalidPayload, reason: "text frames must be UTF-8"))
        }
        if let retryAfterMs = limiter.admit(nowMs: nowMs) {
            var error = StatusError(.rateLimited, "more than \(limits.requestsPerSecond) requests per second on this socket")
            error.retryAfterMs = retryAfterMs
            return .refuse(request: message, error)
        }
        guard requestRunning else {
            requestRunning = true
            return .execute(message)
        }
        guard queuedRequests.count < limits.queuedRequests else {
            var error = StatusError(.rateLimited, "too many requests waiting on this socket")
            error.retryAfterMs = 100
            return .refuse(request: message, error)
        }
        queuedRequests.append(message)
        return .none
    }

    private func tooBig(_ message: ByteBuffer) -> Bool {
        message.readableBytes > limits.maxMessageBytes
    }

    private mutating func protocolError(_ reason: String) -> Action {
        fragments = nil
        return end(.disconnected, farewell: [], close: WebSocketWire.close(.protocolError, reason: reason))
    }

    private mutating func messageTooBig() -> Action {
        fragments = nil
        return end(.disconnected, farewell: [], close: WebSocketWire.close(.messageTooBig, reason: "messages are limited to 64 KiB"))
    }

    private mutating func takeBacklog() -> [ByteBuffer] {
        guard !backlog.isEmpty else { return [] }
        defer {
            backlog = []
            backlogBytes = 0
        }
        return [StatusEvent.coalesced(backlog.map(\.status))]
    }

    /// The close frame that ends a session for `reason`.
    private static func closeFrame(for reason: Ending) -> ByteBuffer {
        switch reason {
        case .timedOut: WebSocketWire.close(.goingAway, reason: "heartbeat timeout")
        case .tooSlow: WebSocketWire.close(.policyViolation, reason: "too slow")
        case .disconnected, .removed: WebSocketWire.close(.normal)
        case .cutOff: WebSocketWire.close(.tryAgainLater, reason: "redis unreachable")
        case .draining: WebSocketWire.close(.serviceRestart, reason: "node restarting")
        }
    }
}
