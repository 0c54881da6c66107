import Foundation
import Logging
import RedisClient
import ServiceLifecycle
import StatusCore

/// Listens to the cluster bus and acts on this node's sessions: delivers status changes through the fan-out index,
/// reloads relationships that changed, closes kicked or replaced devices, drops stale config.
///
/// The bus connection hands events over through a bounded buffer; past its limit events are dropped, counted and
/// followed by a full resynchronisation of relationships, so memory never grows without bound.
final class FanoutService: Service, Sendable {
    /// Bus events buffered between the pub/sub connection and the consumer.
    static let bufferLimit = 65_536

    private let index: FanoutIndex
    private let services: ServerServices
    private let relations: RelationsLoader
    private let subscriber: RedisSubscriber
    private let events: AsyncStream<RedisPubSubEvent>
    private let continuation: AsyncStream<RedisPubSubEvent>.Continuation
    private let logger: Logger

    init(index: FanoutIndex, services: ServerServices, logger: Logger) {
        self.index = index
        self.services = services
        self.relations = RelationsLoader(redis: services.redis)
        self.logger = logger
        let (events, continuation) = AsyncStream.makeStream(of: RedisPubSubEvent.self, bufferingPolicy: .bufferingOldest(Self.bufferLimit))
        self.events = events
        self.continuation = continuation
        self.subscriber = RedisSubscriber(configuration: services.configuration.redis, channels: [BusMessage.channel], logger: logger) { event in
            if case .dropped = continuation.yield(event) {
                Metrics.busEventsDropped.increment()
                continuation.yield(.subscribed)
            }
        }
    }

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try await self.subscriber.run() }
                for await event in events {
                    await process(event)
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.continuation.finish()
        }
    }

    /// Loads a user's relationships into the index (when their first session starts here).
    func loadRelations(_ key: AppUser) async {
        do {
            index.update(key, relations: try await relations.load(key))
        } catch {
            logger.warning("relations load failed", metadata: ["user": "\(key.userId)", "error": "\(error)"])
        }
    }

    private func process(_ event: RedisPubSubEvent) async {
        switch event {
        case .subscribed:
            for user in index.allLocalUsers() { await loadRelations(user) }
        case .message(_, let payload):
            guard let message = try? JSONCoding.decoder.decode(BusMessage.self, from: Data(payload)) else {
                logger.warning("undecodable bus message")
                return
            }
            await process(message)
        }
    }

    private func process(_ message: BusMessage) async {
        switch message {
        case .statusChanged(let change):
            await deliver(change)
        case .relationsChanged(let appId, let userIds):
            for user in index.localUsers(appId: appId, among: userIds) { await loadRelations(user) }
        case .devicesClosed(let appId, let userId, let devices, let reason):
            let connections = Set(devices.map(\.connection))
            for session in index.sessions(of: AppUser(appId: appId, userId: userId)) where connections.contains(session.connectionId) {
                session.kick(reason: reason)
            }
        case .deleted(let appId, let userId):
            let sessions = userId.map { index.sessions(of: AppUser(appId: appId, userId: $0)) } ?? index.sessions(ofApp: appId)
            for session in sessions { session.kick(reason: "deleted") }
            services.apps.invalidate(appId)
        case .configChanged(let appId):
            services.apps.invalidate(appId)
        }
    }

    private func deliver(_ change: StatusChange) async {
        guard let config = try? await services.apps.find(change.appId)?.config else { return }
        let recipients = index.recipients(of: change, config: config)
        guard !recipients.isEmpty, let text = try? DeviceFrames.statusChanged(change.status) else { return }
        for session in recipients { session.send(.text(text)) }
        Metrics.eventsDelivered.increment(by: recipients.count)
    }
}
