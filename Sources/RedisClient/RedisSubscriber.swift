import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// A dedicated pub/sub connection (never part of the command pool): connects, SUBSCRIBEs to the channels,
/// hands each event to `handler` (called synchronously, must be quick and non-blocking), reconnects with
/// backoff and resubscribes after any disconnect, until graceful shutdown or cancellation.
///
/// The handler runs on an event loop thread. After every successful (re)subscription it receives `.subscribed`:
/// messages published while the connection was down are lost, so that is the moment to reload state.
///
/// On a Redis Cluster (given `client`), a classic subscription hears what is published on any node; when the
/// configured node cannot be reached, the next attempt goes to another master the client knows.
public final class RedisSubscriber: Sendable, Service {
    private let configuration: RedisConfiguration
    private let channels: [String]
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let handler: @Sendable (RedisPubSubEvent) -> Void
    private let client: RedisClient?
    private let pingInterval: TimeAmount

    /// Creates a subscriber; nothing happens until ``run()``. With `client`, connection attempts after a failure go
    /// round the masters it knows (a cluster's other nodes).
    public init(
        configuration: RedisConfiguration,
        client: RedisClient? = nil,
        channels: [String],
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        pingInterval: TimeAmount = .seconds(1),
        logger: Logger,
        handler: @escaping @Sendable (RedisPubSubEvent) -> Void
    ) {
        self.configuration = configuration
        self.pingInterval = pingInterval
        self.client = client
        var seen = Set<String>()
        self.channels = channels.filter { seen.insert($0).inserted }
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.handler = handler
    }

    /// Keeps the subscription up until graceful shutdown or cancellation, then closes the connection and returns.
    public func run() async throws {
        guard !self.channels.isEmpty else {
            self.logger.warning("RedisSubscriber has no channels to subscribe to")
            try? await gracefulShutdown()
            return
        }
        let control = SubscriberControl()
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await self.connectionLoop(control: control)
            } onGracefulShutdown: {
                control.stop()
            }
        } onCancel: {
            control.stop()
        }
    }

    private func connectionLoop(control: SubscriberControl) async {
        let eventLoop = self.eventLoopGroup.next()
        var backoff = Backoff()
        var failures = 0
        while !control.isStopped {
            let subscribed = LockedValue(false)
            let wholeUntil = LockedValue<NIODeadline?>(nil)
            var configuration = self.configuration
            if failures > 0, let client = self.client, let masters = try? await client.masterEndpoints(), !masters.isEmpty {
                let candidates = [self.configuration.endpoint] + masters.filter { $0 != self.configuration.endpoint }
                configuration = client.configuration(for: candidates[failures % candidates.count])
            }
            do {
                let channel = try await self.connect(configuration, on: eventLoop, subscribed: subscribed, wholeUntil: wholeUntil)
                guard control.setChannel(channel) else {
                    try? await channel.close()
                    break
                }
                try? await channel.closeFuture.get()
                control.setChannel(nil)
                if !control.isStopped { self.handler(.lost(wholeUntil: wholeUntil.withLock { $0 } ?? .now())) }
            } catch {
                self.logger.warning(
                    "Cannot connect to redis for subscriptions",
                    metadata: ["endpoint": "\(configuration.endpoint.logDescription)", "error": "\(error)"]
                )
            }
            failures = subscribed.withLock { $0 } ? 0 : failures + 1
            if control.isStopped {
                break
            }
            if subscribed.withLock({ $0 }) {
                backoff.reset()
            }
            let delay = backoff.nextDelay()
            self.logger.info("Redis subscription connection lost, reconnecting", metadata: ["delayMs": "\(delay.nanoseconds / 1_000_000)"])
            await control.sleep(for: delay, on: eventLoop)
        }
    }

    private func connect(
        _ configuration: RedisConfiguration,
        on eventLoop: any EventLoop,
        subscribed: LockedValue<Bool>,
        wholeUntil: LockedValue<NIODeadline?>
    ) async throws -> any Channel {
        let channels = self.channels
        let setup = configuration.setupCommands(selecting: false)
        let setupTimeout = TimeAmount(configuration.commandTimeout)
        let pingInterval = self.pingInterval
        let logger = self.logger
        let handler = self.handler
        let onEvent: @Sendable (RedisPubSubEvent) -> Void = { event in
            if case .subscribed = event {
                subscribed.withLock { $0 = true }
            }
            handler(event)
        }
        return try await RedisConnector.connect(configuration: configuration, eventLoop: eventLoop) { channel in
            channel.eventLoop.makeCompletedFuture {
                let pubSubHandler = RedisPubSubHandler(
                    channels: channels,
                    setup: setup,
                    setupTimeout: setupTimeout,
                    pingInterval: pingInterval,
                    wholeUntil: wholeUntil,
                    logger: logger,
                    onEvent: onEvent
                )
                try channel.pipeline.syncOperations.addHandler(pubSubHandler)
            }
        }.get()
    }
}

/// Lets graceful shutdown and cancellation stop a ``RedisSubscriber``'s loop: closes the current connection and
/// cuts a backoff sleep short.
private final class SubscriberControl: Sendable {
    private struct State {
        var isStopped = false
        var channel: (any Channel)?
        var wakeUp: EventLoopPromise<Void>?
    }

    private let state = LockedValue(State())

    var isStopped: Bool {
        self.state.withLock { $0.isStopped }
    }

    /// Stops the loop: closes the connection and ends any sleep.
    func stop() {
        let (channel, wakeUp) = self.state.withLock { state in
            state.isStopped = true
            defer {
                state.channel = nil
                state.wakeUp = nil
            }
            return (state.channel, state.wakeUp)
        }
        channel?.close(promise: nil)
        wakeUp?.succeed()
    }

    /// Records the current connection; returns `false` (recording nothing) when already stopped.
    @discardableResult
    func setChannel(_ channel: (any Channel)?) -> Bool {
        self.state.withLock { state in
            guard !state.isStopped else {
                return false
            }
            state.channel = channel
            return true
        }
    }

    /// Waits for `delay`, or until ``stop()``.
    func sleep(for delay: TimeAmount, on eventLoop: any EventLoop) async {
        let promise = eventLoop.makePromise(of: Void.self)
        let registered = self.state.withLock { state in
            guard !state.isStopped else {
                return false
            }
            state.wakeUp = promise
            return true
        }
        guard registered else {
            promise.succeed()
            return
        }
        let timer = eventLoop.scheduleTask(in: delay) {
            promise.succeed()
        }
        try? await promise.futureResult.get()
        timer.cancel()
        self.state.withLock { $0.wakeUp = nil }
    }
}
