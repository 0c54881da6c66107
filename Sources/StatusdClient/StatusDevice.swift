import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOWebSocket
import ServiceLifecycle
import Synchronization

/// A device of one user on the statusd WebSocket (SPEC §7), behaving as the browser client `statusd.js` does: requests
/// by id with a timeout, heartbeats at the welcome's `heartbeatSeconds`, reconnects with jittered exponential backoff
/// presenting the last `resume` token and asking for a snapshot, and statuses older than one already seen dropped.
///
/// ``run()`` keeps the device connected until it is kicked, logs out, or its task is cancelled (or, as a `Service`,
/// until graceful shutdown); ``events`` yields what it hears meanwhile and finishes when `run()` returns.
public final class StatusDevice: Sendable {
    public let configuration: StatusDeviceConfiguration
    /// The device's events, bounded by ``StatusDeviceConfiguration/eventBufferSize``: when the consumer falls that far
    /// behind, the oldest event is dropped and the device reconnects, so that the snapshot of the new connection
    /// brings the consumer back to the current statuses.
    public let events: AsyncStream<StatusDeviceEvent>

    private let continuation: AsyncStream<StatusDeviceEvent>.Continuation
    private let token: @Sendable () async throws -> String
    private let logger: Logger
    private let replies = PendingReplies()
    private let state = Mutex(State())

    private struct State {
        var writer: WebSocketOutboundWriter?
        var nextId = 1
        var versions = VersionFilter()
        var resume: String?
        var welcome: StatusDeviceWelcome?
        var welcomedThisConnection = false
        /// The consumer fell behind on this connection: the next connect backs off as after a failure.
        var overflowed = false
        var ended = false
    }

    /// What reading a frame asks of the connection.
    private enum FrameOutcome {
        case none
        case welcomed(heartbeatSeconds: Int)
        /// The consumer fell behind: reconnect and resynchronise through the snapshot.
        case overflowed
    }

    /// - Parameter token: a user token for each connect (minted by the app's backend with `mintToken`); asked again on
    ///   every reconnect, so it may hand out a fresh one.
    public init(
        configuration: StatusDeviceConfiguration,
        logger: Logger = Logger(label: "statusd.device"),
        token: @escaping @Sendable () async throws -> String
    ) {
        self.configuration = configuration
        self.logger = logger
        self.token = token
        (events, continuation) = AsyncStream.makeStream(
            of: StatusDeviceEvent.self,
            bufferingPolicy: .bufferingNewest(max(1, configuration.eventBufferSize))
        )
    }

    /// The latest welcome; nil before the first.
    public var welcome: StatusDeviceWelcome? { state.withLock { $0.welcome } }

    /// Whether a connection is open and welcomed.
    public var isConnected: Bool { state.withLock { $0.writer != nil && $0.welcomedThisConnection } }

    /// Connects, and reconnects while ``StatusDeviceConfiguration/reconnect`` allows, until kicked, logged out or
    /// cancelled. Throws only when reconnecting is off and the one connection could not be made.
    public func run() async throws {
        defer { continuation.finish() }
        try await cancelWhenGracefulShutdown { try await self.connectAndReconnect() }
    }

    private func connectAndReconnect() async throws {
        let backoff = ReconnectBackoff(minimum: configuration.minReconnectDelay, maximum: configuration.maxReconnectDelay)
        var attempt = 0
        while !Task.isCancelled && !state.withLock({ $0.ended }) {
            let cause: String
            var movesAtOnce = false
            do {
                let end = try await connectOnce()
                if end.welcomed { attempt = 0 }
                movesAtOnce = end.movesAtOnce
                cause = end.movesAtOnce ? "the node asked to reconnect elsewhere" : "the connection closed"
            } catch  where Task.isCancelled {
                return
            } catch {
                guard configuration.reconnect else { throw error }
                cause = "\(error)"
            }
            if Task.isCancelled || state.withLock({ $0.ended }) || !configuration.reconnect { return }
            // SPEC §9: a node that restarts (1012) or cannot reach Redis (1013) sends its devices elsewhere: at once,
            // with a little jitter so that they do not all arrive together, not after a growing backoff.
            let delay = movesAtOnce ? backoff.moveDelay() : backoff.delay(attempt: attempt)
            attempt += 1
            _ = continuation.yield(.reconnecting(attempt: attempt, delay: delay, cause: cause))
            do {
                try await Task.sleep(for: delay)
            } catch {
                return
            }
        }
    }

    // MARK: - Operations (SPEC §4, §7)

    /// setSelfStatus: `customStatus` nil keeps it, `""` clears it; `availability` nil keeps it.
    public func setSelfStatus(
        customStatus: String? = nil,
        availability: Availability? = nil,
        clearAfterSeconds: Int? = nil
    ) async throws -> UserStatus {
        let fields = SetStatusRequest(customStatus: customStatus, availability: availability, clearAfterSeconds: clearAfterSeconds)
        let status = try await request("setSelfStatus", fields, as: UserStatus.self)
        _ = state.withLock { $0.versions.admit(status) }
        return status
    }

    /// getUserStatus of the given users, as this device's user.
    public func getUserStatus(_ userIds: [String]) async throws -> StatusQueryResult {
        try await request("getUserStatus", UserIdBatch(userIds: userIds), as: StatusQueryResult.self)
    }

    /// subscribeUserStatus; the statuses of the reply count as seen, so older events about them are dropped.
    public func subscribeUserStatus(_ userIds: [String]) async throws -> SubscribeResult {
        let result = try await request("subscribeUserStatus", UserIdBatch(userIds: userIds), as: SubscribeResult.self)
        state.withLock { state in
            for status in result.statuses { _ = state.versions.admit(status) }
        }
        return result
    }

    /// unsubscribeUserStatus; nil removes every subscription of the user.
    public func unsubscribeUserStatus(_ userIds: [String]?) async throws -> UnsubscribeResult {
        try await request("unsubscribeUserStatus", OptionalUserIdList(userIds: userIds), as: UnsubscribeResult.self)
    }

    /// A heartbeat now (they are also sent on their own at the heartbeat interval).
    public func heartbeat() async throws {
        _ = try await request("heartbeat", NoFields(), as: HeartbeatResult.self)
    }

    /// Logs the device out: the server files its departure and closes it, and ``run()`` returns without reconnecting.
    @discardableResult
    public func logout() async throws -> UserStatus {
        // Marked before sending: the server closes the socket right after its reply, and the close must not be taken
        // for a loss to reconnect from.
        state.withLock { $0.ended = true }
        do {
            return try await request("logout", NoFields(), as: UserStatus.self)
        } catch {
            state.withLock { $0.ended = false }
            throw error
        }
    }

    /// Sends `{"id", "op", …fields}` and waits for the reply with that id, at most
    /// ``StatusDeviceConfiguration/requestTimeout``; an `ok: false` reply throws its ``StatusdError``.
    public func request<Fields: Encodable & Sendable, Result: Decodable>(
        _ op: String,
        _ fields: Fields,
        as resultType: Result.Type
    ) async throws -> Result {
        let (writer, id) = state.withLock { state -> (WebSocketOutboundWriter?, String) in
            defer { state.nextId += 1 }
            return (state.welcomedThisConnection ? state.writer : nil, String(state.nextId))
        }
        guard let writer else { throw StatusdError(code: .disconnected, message: "not connected") }
        let text = String(decoding: try JSONEncoder().encode(RequestFrame(id: id, op: op, fields: fields)), as: UTF8.self)
        replies.expect(id)
        do {
            try await writer.writeTextMessage(text)
        } catch {
            replies.forget(id)
            throw StatusdError(code: .disconnected, message: "\(op) could not be sent: \(error)")
        }
        let timeout = configuration.requestTimeout
        let replies = replies
        let frame = try await withThrowingTaskGroup(of: Data.self) { group in
            group.addTask { try await replies.reply(to: id) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw StatusdError(code: .timeout, message: "no reply to \(op) within \(timeout)")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
        return try Self.result(of: frame, as: Result.self)
    }

    /// The `result` of a reply frame; an `ok: false` reply throws its ``StatusdError``.
    static func result<Result: Decodable>(of frame: Data, as resultType: Result.Type) throws -> Result {
        let decoder = JSONDecoder()
        let reply = try decoder.decode(InboundFrame.self, from: frame)
        guard reply.ok == true else {
            let detail = reply.error ?? ErrorBody.Detail(code: StatusdError.Code.unexpectedResponse.rawValue, message: "a reply without ok")
            throw StatusdError(detail, httpStatus: nil)
        }
        return try decoder.decode(ReplyFrame<Result>.self, from: frame).result
    }

    // MARK: - Connection

    /// How one connection ended.
    private struct ConnectionEnd {
        /// Welcomed (and not given up because the consumer fell behind), which resets the backoff.
        var welcomed: Bool
        /// Closed by the server with 1012 (service restart) or 1013 (try again later): reconnect at once.
        var movesAtOnce: Bool
    }

    /// Whether a close code asks the device to reconnect at once, through another node (SPEC §9).
    static func movesAtOnce(_ code: WebSocketErrorCode?) -> Bool {
        guard case .unknown(let raw) = code else { return false }
        return raw == 1012 || raw == 1013
    }

    /// One connection, from the upgrade to the close.
    private func connectOnce() async throws -> ConnectionEnd {
        let token = try await token()
        var headers = HTTPFields()
        headers[.authorization] = "Bearer \(token)"
        let webSocketConfiguration = WebSocketClientConfiguration(
            maxFrameSize: configuration.maxFrameSize,
            additionalHeaders: headers,
            autoPing: .disabled
        )
        let url = configuration.connectURL(resume: state.withLock { $0.resume })
        state.withLock {
            $0.welcomedThisConnection = false
            $0.overflowed = false
        }
        let close = try await WebSocketClient.connect(url: url, configuration: webSocketConfiguration, logger: logger) { inbound, outbound, _ in
            try await self.session(inbound: inbound, outbound: outbound)
        }
        let welcomed = state.withLock { $0.welcomedThisConnection && !$0.overflowed }
        return ConnectionEnd(welcomed: welcomed, movesAtOnce: Self.movesAtOnce(close?.closeCode))
    }

    /// Reads the connection's frames and, once welcomed, heartbeats beside them; when reading ends the heartbeats stop
    /// and every request still waiting fails with ``StatusdError/Code/disconnected``.
    private func session(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        state.withLock { $0.writer = outbound }
        defer {
            state.withLock { $0.writer = nil }
            replies.failAll(StatusdError(code: .disconnected, message: "the connection closed"))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            reading: for try await message in inbound.messages(maxSize: configuration.maxFrameSize) {
                guard case .text(let text) = message else { continue }
                switch handle(Data(text.utf8)) {
                case .none:
                    break
                case .welcomed(let heartbeatSeconds):
                    let interval = configuration.heartbeatInterval ?? .seconds(max(1, heartbeatSeconds))
                    group.addTask { try await self.heartbeats(every: interval, outbound: outbound) }
                case .overflowed:
                    logger.warning("event buffer full: reconnecting for a snapshot")
                    state.withLock { $0.overflowed = true }
                    break reading
                }
            }
            group.cancelAll()
        }
    }

    /// Heartbeats until cancelled; one without a reply in time closes the connection (then the device reconnects).
    private func heartbeats(every interval: Duration, outbound: WebSocketOutboundWriter) async throws {
        while true {
            try await Task.sleep(for: interval)
            do {
                try await heartbeat()
            } catch let error as StatusdError where error.code == .timeout {
                try await outbound.close(.goingAway, reason: "heartbeat timeout")
                return
            } catch let error as StatusdError where error.code == .disconnected {
                return
            } catch let error as StatusdError {
                logger.debug("heartbeat refused: \(error)")
            }
        }
    }

    /// What one text frame of the server is, as the device reads it.
    enum ServerFrame {
        case welcome(StatusDeviceWelcome)
        /// A reply, passed whole to the request waiting for its `id`.
        case reply(id: String)
        case statusChanged([UserStatus], snapshot: Bool, truncated: Bool)
        case kicked(reason: String)
        /// An event this client does not know (a newer server's), or a reply to no request of this client.
        case ignored
    }

    /// Reads one text frame; nil for one that does not decode. Separate from the connection so that the frames of the
    /// AsyncAPI document's examples can be read through it in tests.
    static func read(_ data: Data) -> ServerFrame? {
        let decoder = JSONDecoder()
        guard let frame = try? decoder.decode(InboundFrame.self, from: data) else { return nil }
        if frame.event == "welcome" {
            guard let welcome = try? decoder.decode(StatusDeviceWelcome.self, from: data) else { return nil }
            return .welcome(welcome)
        }
        if let id = frame.id { return .reply(id: id) }
        switch frame.event {
        case "onUserStatusChanged":
            return .statusChanged(frame.statuses ?? [], snapshot: frame.snapshot ?? false, truncated: frame.truncated ?? false)
        case "kicked":
            return .kicked(reason: frame.reason ?? "")
        default:
            return .ignored
        }
    }

    /// Handles one text frame: a reply goes to its requester, an event to ``events``.
    private func handle(_ data: Data) -> FrameOutcome {
        guard let frame = Self.read(data) else {
            logger.debug("a frame that does not decode was skipped")
            return .none
        }
        switch frame {
        case .welcome(let welcome):
            state.withLock { state in
                state.welcome = welcome
                state.welcomedThisConnection = true
                if let resume = welcome.resume { state.resume = resume }
                _ = state.versions.admit(welcome.status)
            }
            return yield(.welcome(welcome)) ? .welcomed(heartbeatSeconds: welcome.heartbeatSeconds) : .overflowed
        case .reply(let id):
            replies.deliver(id, data)
            return .none
        case .statusChanged(let statuses, let snapshot, let truncated):
            let fresh = state.withLock { state in statuses.filter { state.versions.admit($0) } }
            // A snapshot is passed on even when empty: it tells the consumer that it now has every current status.
            guard !fresh.isEmpty || snapshot else { return .none }
            return yield(.statusChanged(fresh, snapshot: snapshot, truncated: truncated)) ? .none : .overflowed
        case .kicked(let reason):
            state.withLock { $0.ended = true }
            _ = yield(.kicked(reason: reason))
            return .none
        case .ignored:
            return .none
        }
    }

    /// Yields an event; false when the buffer was full and the oldest event was dropped.
    private func yield(_ event: StatusDeviceEvent) -> Bool {
        if case .dropped = continuation.yield(event) { return false }
        return true
    }
}

extension StatusDevice: Service {}
