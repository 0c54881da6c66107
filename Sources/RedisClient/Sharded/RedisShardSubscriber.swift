import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// Redis 7 sharded pub/sub (`SSUBSCRIBE`) to a changing set of channels, on one server or a Redis Cluster: one
/// connection per master, each channel subscribed where its slot lives. Never part of the command pool.
///
/// ``subscribe(_:)`` returns once Redis confirmed every channel, so a caller knows from when it hears them.
/// ``unsubscribe(_:)`` drops channels. A connection that drops (or leaves a ping unanswered) reconnects with backoff
/// and subscribes to its channels again; channels whose slot moved (Redis says so with an unasked `sunsubscribe` or a
/// `MOVED`), or whose master is gone, are routed again after the client re-reads the slot map. Either way, once
/// everything is subscribed again the handler receives `.subscribed`: what was published meanwhile is lost, and that
/// is the moment to resynchronise. The loss itself is told at once (`.lost`, with the moment the connection's feed was
/// last known whole), when the connection drops or the channels move.
///
/// The handler runs on the subscriber's event loop; it must be quick and non-blocking. Run the subscriber as a service
/// (``run()``): it does the re-routing, and closes every connection on shutdown.
public final class RedisShardSubscriber: Sendable, Service {
    private struct Routes {
        /// The links, by master.
        var links: [RedisConfiguration.Endpoint: ShardLink] = [:]
        /// channel → the master it is subscribed on.
        var homes: [String: RedisConfiguration.Endpoint] = [:]
        /// Channels to route again, and links whose master could not be reached.
        var toReroute: Set<String> = []
        var unreachable: Set<RedisConfiguration.Endpoint> = []
    }

    private let client: RedisClient
    private let eventLoop: any EventLoop
    private let routes: NIOLoopBoundBox<Routes>
    private let logger: Logger
    private let pingInterval: TimeAmount
    private let confirmTimeout: TimeAmount
    private let handler: @Sendable (RedisPubSubEvent) -> Void
    private let wakeUps: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    /// Creates a subscriber that finds masters through `client`; nothing is opened before the first ``subscribe(_:)``.
    public init(
        client: RedisClient,
        eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next(),
        pingInterval: TimeAmount = .seconds(1),
        confirmTimeout: TimeAmount = .seconds(5),
        logger: Logger,
        handler: @escaping @Sendable (RedisPubSubEvent) -> Void
    ) {
        self.client = client
        self.eventLoop = eventLoop
        self.routes = .makeBoxSendingValue(Routes(), eventLoop: eventLoop)
        self.logger = logger
        self.pingInterval = pingInterval
        self.confirmTimeout = confirmTimeout
        self.handler = handler
        (self.wakeUps, self.wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Subscribes to `channels` (those already subscribed are kept as they are) and waits until Redis confirmed them.
    /// Throws a connection problem when that does not happen in time; the channels stay wanted and are subscribed as
    /// soon as their master is back (followed by `.subscribed`).
    public func subscribe(_ channels: [String]) async throws {
        try await self.update(channels) { _ in true }
    }

    /// Drops `channels` (unknown ones are ignored). Returns at once; the unsubscriptions are written in the background.
    public func unsubscribe(_ channels: [String]) {
        guard !channels.isEmpty else { return }
        self.eventLoop.execute {
            self.drop(channels)
        }
    }

    /// Brings each of `channels` in line with `isWanted`, asked on the subscriber's event loop at the moment the change
    /// is made: a wanted channel is subscribed (and waited for), an unwanted one dropped. Because the answer is read
    /// when the change is applied, calls made concurrently for one channel end in the state the last answer gives,
    /// whatever order they run in.
    public func update(_ channels: [String], isWanted: @escaping @Sendable (String) -> Bool) async throws {
        guard !channels.isEmpty else { return }
        var endpoints: [String: RedisConfiguration.Endpoint] = [:]
        for channel in channels {
            endpoints[channel] = try await self.client.endpoint(ofSlot: RedisKeySlot.of(channel))
        }
        let confirmed = self.eventLoop.flatSubmit {
            var groups: [RedisConfiguration.Endpoint: [String]] = [:]
            var unwanted: [String] = []
            for channel in channels {
                if isWanted(channel) {
                    groups[endpoints[channel]!, default: []].append(channel)
                } else {
                    unwanted.append(channel)
                }
            }
            self.drop(unwanted)
            let futures = groups.map { endpoint, channels in self.add(channels, at: endpoint, afterMove: false) }
            return EventLoopFuture.andAllSucceed(futures, on: self.eventLoop)
        }
        let promise = self.eventLoop.makePromise(of: Void.self)
        let timeout = self.eventLoop.scheduleTask(in: self.confirmTimeout) {
            promise.fail(RedisClientError(kind: .timeout, message: "redis did not confirm \(channels.count) shard subscriptions in time"))
        }
        confirmed.whenComplete { result in
            timeout.cancel()
            promise.completeWith(result)
        }
        try await promise.futureResult.get()
    }

    /// Whether Redis confirmed every one of `channels` on the current connections, asked on the subscriber's event loop
    /// and sending nothing: a caller that may not send anything to Redis yet learns whether it hears them already. A
    /// channel confirmed now stays so until something drops it (``update(_:isWanted:)`` or ``prune(keepIf:)`` saying it
    /// is not wanted) or its connection is lost, which the handler hears about (`.subscribed` once it is back).
    public func hears(_ channels: [String]) async -> Bool {
        await heard(among: channels).count == Set(channels).count
    }

    /// Which of `channels` Redis confirmed on the current connections, as ``hears(_:)`` asks it, in one visit to the
    /// subscriber's event loop.
    public func heard(among channels: [String]) async -> Set<String> {
        (try? await self.eventLoop.submit {
            Set(
                channels.filter { channel in
                    guard let home = self.routes.value.homes[channel], let link = self.routes.value.links[home] else { return false }
                    return link.isConfirmed(channel)
                }
            )
        }.get()) ?? []
    }

    /// Drops every channel for which `keepIf` (asked on the subscriber's event loop) says no.
    public func prune(keepIf: @escaping @Sendable (String) -> Bool) async {
        try? await self.eventLoop.submit {
            self.drop(self.routes.value.homes.keys.filter { !keepIf($0) })
        }.get()
    }

    /// How many channels are subscribed or wanted.
    public func channelCount() async -> Int {
        (try? await self.eventLoop.submit { self.routes.value.homes.count }.get()) ?? 0
    }

    /// Re-routes moved channels until graceful shutdown or cancellation, then closes every connection.
    public func run() async throws {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                for await _ in self.wakeUps {
                    await self.reroute()
                }
            } onGracefulShutdown: {
                self.wake.finish()
            }
        } onCancel: {
            self.wake.finish()
        }
        try? await self.eventLoop.submit {
            for link in self.routes.value.links.values { link.close() }
            self.routes.value.links = [:]
        }.get()
    }

    // MARK: - On the event loop

    private func drop(_ channels: [String]) {
        var byLink: [RedisConfiguration.Endpoint: [String]] = [:]
        for channel in channels {
            guard let home = self.routes.value.homes.removeValue(forKey: channel) else { continue }
            byLink[home, default: []].append(channel)
            self.routes.value.toReroute.remove(channel)
        }
        for (endpoint, channels) in byLink {
            self.routes.value.links[endpoint]?.remove(channels)
        }
    }

    private func add(_ channels: [String], at endpoint: RedisConfiguration.Endpoint, afterMove: Bool) -> EventLoopFuture<Void> {
        var fresh: [String] = []
        for channel in channels {
            if let home = self.routes.value.homes[channel], home != endpoint {
                // Routed elsewhere already (an earlier call saw another slot map): move it.
                self.routes.value.links[home]?.remove([channel])
            }
            self.routes.value.homes[channel] = endpoint
            fresh.append(channel)
        }
        return self.link(at: endpoint).add(fresh, afterMove: afterMove)
    }

    private func link(at endpoint: RedisConfiguration.Endpoint) -> ShardLink {
        if let link = self.routes.value.links[endpoint] { return link }
        let link = ShardLink(
            endpoint: endpoint,
            configuration: self.client.configuration(for: endpoint),
            eventLoop: self.eventLoop,
            pingInterval: self.pingInterval,
            logger: self.logger
        ) { [weak self] report, link in
            self?.received(report, from: link)
        }
        self.routes.value.links[endpoint] = link
        return link
    }

    private func received(_ report: ShardLinkReport, from link: ShardLink) {
        switch report {
        case .message(let channel, let payload):
            self.handler(.message(channel: channel, payload: payload))
        case .resubscribed:
            self.handler(.subscribed)
        case .lost(let wholeUntil):
            self.handler(.lost(wholeUntil: wholeUntil))
        case .moved(let channels, let wholeUntil):
            // From the slot's move until the channels are subscribed where it went, what is published there is missed.
            self.handler(.lost(wholeUntil: wholeUntil))
            for channel in channels where self.routes.value.homes[channel] == link.endpoint {
                self.routes.value.toReroute.insert(channel)
            }
            self.wake.yield()
        case .unreachable:
            self.routes.value.unreachable.insert(link.endpoint)
            self.wake.yield()
        }
    }

    // MARK: - Re-routing

    /// Re-reads the slot map, then subscribes moved channels where their slot now lives, and moves the channels of an
    /// unreachable master that no longer serves slots (a replica took over).
    private func reroute() async {
        await self.client.refreshTopology()
        let masters = Set((try? await self.client.masterEndpoints()) ?? [])
        let work: [(channel: String, home: RedisConfiguration.Endpoint?)]? = try? await self.eventLoop.submit {
            var channels = self.routes.value.toReroute.map { ($0, self.routes.value.homes[$0]) }
            self.routes.value.toReroute = []
            let gone = self.routes.value.unreachable.subtracting(masters)
            self.routes.value.unreachable = []
            for endpoint in gone {
                guard let link = self.routes.value.links.removeValue(forKey: endpoint) else { continue }
                // Its master is gone from the map: whatever it held is routed afresh.
                channels += link.takeAll().map { ($0, nil) }
                link.close()
            }
            return channels.filter { self.routes.value.homes[$0.0] != nil }
        }.get()
        guard let work, !work.isEmpty else { return }
        var groups: [RedisConfiguration.Endpoint: [String]] = [:]
        var unchanged = false
        for (channel, home) in work {
            guard let endpoint = try? await self.client.endpoint(ofSlot: RedisKeySlot.of(channel)) else {
                self.retryLater(channel)
                continue
            }
            unchanged = unchanged || endpoint == home
            groups[endpoint, default: []].append(channel)
        }
        guard !groups.isEmpty else { return }
        if unchanged {
            // The map still names the master that just let a channel go: it may not be updated yet, or that master
            // answered in the middle of a migration. Pause briefly, so that a refusal repeats at this pace at most.
            try? await Task.sleep(for: .milliseconds(100))
        }
        self.logger.info("Re-routing shard subscriptions", metadata: ["channels": "\(work.count)"])
        try? await self.eventLoop.submit {
            for (endpoint, channels) in groups {
                let stillWanted = channels.filter { self.routes.value.homes[$0] != nil }
                _ = self.add(stillWanted, at: endpoint, afterMove: true)
            }
        }.get()
    }

    private func retryLater(_ channel: String) {
        self.eventLoop.scheduleTask(in: .milliseconds(200)) {
            if self.routes.value.homes[channel] != nil {
                self.routes.value.toReroute.insert(channel)
                self.wake.yield()
            }
        }
    }
}
