import Logging
import NIOCore

/// One sharded pub/sub connection, to one master, bound to one event loop: it opens the connection when it has channels,
/// writes what its ``ShardLinkState`` returns, pings, reconnects with backoff after any loss, and reports messages,
/// confirmations, moved channels and gaps to the ``RedisShardSubscriber`` that owns it.
final class ShardLink: @unchecked Sendable {
    // @unchecked: every stored property is read and written on `eventLoop` only.
    let endpoint: RedisConfiguration.Endpoint
    let eventLoop: any EventLoop
    private let configuration: RedisConfiguration
    private let logger: Logger
    private let pingInterval: TimeAmount
    private let report: @Sendable (ShardLinkReport, ShardLink) -> Void
    private var state = ShardLinkState()
    private var channel: (any Channel)?
    private var connecting = false
    private var closed = false
    private var waiters: [String: [EventLoopPromise<Void>]] = [:]
    private var backoff = Backoff()
    private var pingTimer: Scheduled<Void>?
    /// The current connection's pings, from the moment it sent its subscriptions.
    private var pings: SubscriptionPings?

    init(
        endpoint: RedisConfiguration.Endpoint,
        configuration: RedisConfiguration,
        eventLoop: any EventLoop,
        pingInterval: TimeAmount,
        logger: Logger,
        report: @escaping @Sendable (ShardLinkReport, ShardLink) -> Void
    ) {
        self.endpoint = endpoint
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.pingInterval = pingInterval
        self.logger = logger
        self.report = report
    }

    /// Adds channels (on the loop); the returned future succeeds once Redis confirmed all of them.
    func add(_ channels: [String], afterMove: Bool) -> EventLoopFuture<Void> {
        self.eventLoop.preconditionInEventLoop()
        let pending = channels.filter { !self.state.confirmed.contains($0) }
        let futures = pending.map { channel -> EventLoopFuture<Void> in
            let promise = self.eventLoop.makePromise(of: Void.self)
            self.waiters[channel, default: []].append(promise)
            return promise.futureResult
        }
        self.write(self.state.add(channels, afterMove: afterMove))
        self.connectIfNeeded()
        return EventLoopFuture.andAllSucceed(futures, on: self.eventLoop)
    }

    /// Drops channels (on the loop).
    func remove(_ channels: [String]) {
        self.eventLoop.preconditionInEventLoop()
        self.write(self.state.remove(channels))
        for channel in channels {
            for promise in self.waiters.removeValue(forKey: channel) ?? [] { promise.succeed() }
        }
    }

    /// Takes every channel away to be routed elsewhere (on the loop); the connection closes.
    func takeAll() -> [String] {
        self.eventLoop.preconditionInEventLoop()
        let channels = self.state.takeAll()
        self.channel?.close(promise: nil)
        return channels
    }

    /// Whether Redis confirmed `channel` on the current connection (on the loop).
    func isConfirmed(_ channel: String) -> Bool {
        self.eventLoop.preconditionInEventLoop()
        return self.state.confirmed.contains(channel)
    }

    /// Whether the link holds no channel.
    var isEmpty: Bool { self.state.wanted.isEmpty }

    /// Closes the connection for good (on the loop).
    func close() {
        self.eventLoop.preconditionInEventLoop()
        self.closed = true
        self.channel?.close(promise: nil)
        self.failWaiters(RedisClientError(kind: .connectionClosed, message: "the subscriber was closed"))
    }

    /// Writes `commands`, after `setup` (the connection's own setup, on a new connection), in one flush.
    private func write(_ commands: [ShardLinkState.Command], after setup: [[String]] = []) {
        guard let channel = self.channel, !commands.isEmpty || !setup.isEmpty else { return }
        var bytes = channel.allocator.buffer(capacity: 64 * (setup.count + commands.count))
        for command in setup {
            RedisCommandEncoder.encode(command, into: &bytes)
        }
        for command in commands {
            RedisCommandEncoder.encode(command.arguments, into: &bytes)
        }
        channel.writeAndFlush(bytes, promise: nil)
    }

    private func connectIfNeeded() {
        guard !self.closed, !self.connecting, self.channel == nil, !self.state.wanted.isEmpty else { return }
        self.connecting = true
        let setup = self.configuration.setupCommands(selecting: false)
        RedisConnector.connect(configuration: self.configuration, eventLoop: self.eventLoop) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(ShardPubSubHandler(link: self, setupReplies: setup.count))
            }
        }.hop(to: self.eventLoop).assumeIsolated().whenComplete { result in
            self.connecting = false
            switch result {
            case .success(let channel):
                guard !self.closed else {
                    channel.close(promise: nil)
                    return
                }
                self.backoff.reset()
                self.channel = channel
                // The setup goes first, in the same write: the connect's promise is fulfilled before the channel
                // is active, so nothing written from the handler's channelActive could come before this.
                self.write(self.state.connectionEstablished(), after: setup)
                self.pings = SubscriptionPings(subscribedAt: .now())
                self.schedulePing()
                channel.closeFuture.hop(to: self.eventLoop).assumeIsolated().whenComplete { _ in self.connectionClosed(channel) }
            case .failure(let error):
                self.logger.warning(
                    "Cannot connect to redis for shard subscriptions",
                    metadata: ["endpoint": "\(self.endpoint.logDescription)", "error": "\(error)"]
                )
                self.failWaiters(RedisClientError(kind: .connectionUnavailable, message: "cannot connect to \(self.endpoint.logDescription)"))
                self.report(.unreachable, self)
                self.retryLater()
            }
        }
    }

    private func connectionClosed(_ channel: any Channel) {
        guard self.channel === channel else { return }
        self.channel = nil
        self.pingTimer?.cancel()
        self.pingTimer = nil
        let wholeUntil = self.pings?.wholeUntil ?? .now()
        self.pings = nil
        self.state.connectionLost()
        self.failWaiters(RedisClientError(kind: .connectionClosed, message: "the shard subscription connection closed"))
        guard !self.closed else { return }
        self.report(.lost(wholeUntil: wholeUntil), self)
        self.logger.info("Redis shard subscription connection lost, reconnecting", metadata: ["endpoint": "\(self.endpoint.logDescription)"])
        self.retryLater()
    }

    private func retryLater() {
        let delay = self.backoff.nextDelay()
        self.eventLoop.assumeIsolated().scheduleTask(in: delay) { self.connectIfNeeded() }
    }

    private func failWaiters(_ error: RedisClientError) {
        let waiters = self.waiters
        self.waiters = [:]
        for promise in waiters.values.joined() {
            promise.fail(error)
        }
    }

    private func schedulePing() {
        self.pingTimer = self.eventLoop.assumeIsolated().scheduleTask(in: self.pingInterval) {
            guard let channel = self.channel else { return }
            guard self.pings?.tick(at: .now()) == .ping else {
                self.logger.warning("Redis did not answer a ping on a shard subscription connection, reconnecting")
                channel.close(promise: nil)
                return
            }
            var bytes = channel.allocator.buffer(capacity: 16)
            RedisCommandEncoder.encode(["PING"], into: &bytes)
            channel.writeAndFlush(bytes, promise: nil)
            self.schedulePing()
        }
    }

    /// A decoded reply or push from the connection (called by the handler, on the loop).
    func received(_ value: RedisValue) {
        for action in self.state.receive(value) {
            switch action {
            case .confirmed(let channels):
                for channel in channels {
                    for promise in self.waiters.removeValue(forKey: channel) ?? [] { promise.succeed() }
                }
            case .pong:
                self.pings?.answered()
            case .moved(let channels):
                for channel in channels {
                    for promise in self.waiters.removeValue(forKey: channel) ?? [] {
                        promise.fail(RedisClientError(kind: .connectionUnavailable, message: "channel \(channel) moved"))
                    }
                }
                self.report(.moved(channels, wholeUntil: self.pings?.wholeUntil ?? .now()), self)
            case .message(let channel, let payload):
                self.report(.message(channel: channel, payload: payload), self)
            case .resubscribed:
                self.report(.resubscribed, self)
            }
        }
    }
}

/// What a ``ShardLink`` tells its subscriber.
enum ShardLinkReport: Sendable {
    /// A message on one of its channels.
    case message(channel: String, payload: [UInt8])
    /// These channels left it (their slot moved, or Redis refused them): route them again. What was published on
    /// them after `wholeUntil` (the link's last answered ping) may be missed until they are subscribed where their slot
    /// lives now.
    case moved([String], wholeUntil: NIODeadline)
    /// Every channel is subscribed again after a gap.
    case resubscribed
    /// Its connection was lost: messages published on its channels after `wholeUntil` may be missed until it reports
    /// ``resubscribed``.
    case lost(wholeUntil: NIODeadline)
    /// Its master could not be reached: perhaps it is gone and a replica took over.
    case unreachable
}

/// The channel handler of a ``ShardLink``'s connection: decodes replies and pushes, skips the replies to the
/// connection's setup (AUTH, CLIENT SETNAME, which the link writes first), and hands the rest to the link.
final class ShardPubSubHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let decoder = RedisReplyDecoder()
    private let link: ShardLink
    /// Replies to the setup still to come.
    private var setupPending: Int

    init(link: ShardLink, setupReplies: Int) {
        self.link = link
        self.setupPending = setupReplies
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.decoder.feed(self.unwrapInboundIn(data))
        do {
            while context.channel.isActive, let value = try self.decoder.next() {
                if self.setupPending > 0 {
                    // A reply to the setup: a refusal closes the connection (the link retries with backoff).
                    self.setupPending -= 1
                    if case .error = value {
                        context.close(promise: nil)
                        return
                    }
                    continue
                }
                self.link.received(value)
            }
        } catch {
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
