import Logging
import NIOCore

/// The channel handler of a subscription connection: on connect it sends its setup (AUTH, CLIENT SETNAME) and
/// SUBSCRIBE, then turns pushed `message` arrays into ``RedisPubSubEvent``s. Runs entirely on the channel's event loop.
///
/// If the subscription is not confirmed within `setupTimeout`, or Redis answers with an error, the connection is
/// closed; ``RedisSubscriber`` then reconnects. Once subscribed it sends `PING` every `pingInterval`; a ping still
/// unanswered at the next one means the connection is half-open (or Redis is stuck), and it is closed too, so that a
/// silent gap in the feed is found within two intervals and the consumer resynchronises after the reconnect. The
/// moment up to which the answers prove the feed whole (``SubscriptionPings/wholeUntil``) is kept in `wholeUntil`, for
/// the ``RedisPubSubEvent/lost(wholeUntil:)`` the subscriber sends when the connection ends.
final class RedisPubSubHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let decoder = RedisReplyDecoder()
    private let channels: [String]
    /// Sent before SUBSCRIBE (``RedisConfiguration/setupCommands(selecting:)``).
    private let setup: [[String]]
    private let setupTimeout: TimeAmount
    private let logger: Logger
    private let onEvent: @Sendable (RedisPubSubEvent) -> Void
    /// Replies still to come for commands sent before SUBSCRIBE.
    private var setupRepliesPending = 0
    private var confirmedChannels = 0
    private var isSubscribed = false
    private var setupTimer: Scheduled<Void>?
    private let pingInterval: TimeAmount
    private var pingTimer: Scheduled<Void>?
    /// The pings, from the moment the subscriptions were sent (pinging starts once they are confirmed).
    private var pings: SubscriptionPings?
    private let wholeUntil: LockedValue<NIODeadline?>

    init(
        channels: [String],
        setup: [[String]],
        setupTimeout: TimeAmount,
        pingInterval: TimeAmount = .seconds(1),
        wholeUntil: LockedValue<NIODeadline?> = LockedValue(nil),
        logger: Logger,
        onEvent: @escaping @Sendable (RedisPubSubEvent) -> Void
    ) {
        self.pingInterval = pingInterval
        self.wholeUntil = wholeUntil
        self.channels = channels
        self.setup = setup
        self.setupTimeout = setupTimeout
        self.logger = logger
        self.onEvent = onEvent
    }

    func channelActive(context: ChannelHandlerContext) {
        var bytes = context.channel.allocator.buffer(capacity: 64)
        for command in self.setup {
            RedisCommandEncoder.encode(command, into: &bytes)
        }
        self.setupRepliesPending = self.setup.count
        RedisCommandEncoder.encode(["SUBSCRIBE"] + self.channels, into: &bytes)
        self.pings = SubscriptionPings(subscribedAt: .now())
        context.writeAndFlush(self.wrapOutboundOut(bytes), promise: nil)
        self.setupTimer = context.eventLoop.assumeIsolated().scheduleTask(in: self.setupTimeout) {
            self.setupTimer = nil
            if !self.isSubscribed {
                self.logger.warning("Redis did not confirm the subscription in time, reconnecting")
                context.close(promise: nil)
            }
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.setupTimer?.cancel()
        self.setupTimer = nil
        self.pingTimer?.cancel()
        self.pingTimer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.decoder.feed(self.unwrapInboundIn(data))
        do {
            while context.channel.isActive, let value = try self.decoder.next() {
                self.handle(value, context: context)
            }
        } catch {
            self.logger.error("Redis subscription connection sent bad data, reconnecting", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.logger.debug("Redis subscription connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func startPinging(context: ChannelHandlerContext) {
        self.pingTimer = context.eventLoop.assumeIsolated().scheduleTask(in: self.pingInterval) {
            guard context.channel.isActive else { return }
            guard self.pings?.tick(at: .now()) == .ping else {
                self.logger.warning("Redis did not answer a ping on the subscription connection, reconnecting")
                context.close(promise: nil)
                return
            }
            var bytes = context.channel.allocator.buffer(capacity: 16)
            RedisCommandEncoder.encode(["PING"], into: &bytes)
            context.writeAndFlush(self.wrapOutboundOut(bytes), promise: nil)
            self.startPinging(context: context)
        }
    }

    private func handle(_ value: RedisValue, context: ChannelHandlerContext) {
        if case .error(let message) = value {
            self.logger.error("Redis refused the subscription, reconnecting", metadata: ["error": "\(message)"])
            context.close(promise: nil)
            return
        }
        if self.setupRepliesPending > 0 {
            self.setupRepliesPending -= 1
            return
        }
        // Pushes are arrays: ["message", channel, payload], ["subscribe", channel, count], ["pong", ""].
        guard let items = value.array, items.count >= 2, let kind = items[0].string else {
            return
        }
        switch kind {
        case "pong":
            self.pings?.answered()
            let whole = self.pings?.wholeUntil
            self.wholeUntil.withLock { $0 = whole }
        case "message" where items.count >= 3:
            self.onEvent(.message(channel: items[1].string ?? "", payload: items[2].bytes ?? []))
        case "subscribe":
            self.confirmedChannels += 1
            if self.confirmedChannels == self.channels.count {
                self.isSubscribed = true
                self.setupTimer?.cancel()
                self.setupTimer = nil
                self.logger.debug("Subscribed to redis channels", metadata: ["channels": "\(self.channels)"])
                let whole = self.pings?.wholeUntil
                self.wholeUntil.withLock { $0 = whole }
                self.startPinging(context: context)
                self.onEvent(.subscribed)
            }
        default:
            break
        }
    }
}
