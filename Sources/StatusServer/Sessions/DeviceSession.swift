import Foundation
import NIOCore
import StatusCore
import Synchronization

/// One connected device on this node: who it is, what it listens to, the channel handler that owns its socket, and
/// its last sign of life.
///
/// A session costs one object and one channel handler: no task, no stream, no timer. Everything that touches the
/// socket runs on the channel's event loop inside ``DeviceChannelHandler``; other threads reach it through
/// ``deliver(_:)`` (already on the loop, from the fan-out), ``end(_:)`` and ``kick(reason:)``.
final class DeviceSession: Sendable {
    typealias Ending = DeviceConnectionStateMachine.Ending

    let connectionId: String
    let appId: String
    let userId: String
    let deviceId: String
    let platform: Platform
    let scope: PresenceScope
    /// The event loop of the device's channel: every delivery to this session runs there.
    let eventLoop: any EventLoop
    /// Its app's counters on this node (events delivered, rate-limit refusals), for the admin API's stats.
    let activity: AppActivity.Counters?
    /// Its channel handler (``HandlerSlot``): made on the event loop the first time it is needed there.
    private let handler: NIOLoopBoundBox<HandlerSlot<DeviceChannelHandler>>
    /// Makes the session's handler (``channelHandler``); nil for a session that never gets a socket.
    private let makeHandler: (@Sendable (DeviceSession) -> DeviceChannelHandler)?
    private let lastActivity: Atomic<Int64>
    /// The node's clock: signs of life and the connection's rate limits are timed by it.
    let clock: any NodeClock
    private let connectedInRedis = Atomic<Bool>(false)

    /// Whether the device's record was written in Redis (set once its connect returned): only then can a missing
    /// record mean that the device was removed (``DeviceRecordAudit``).
    var isConnectedInRedis: Bool { connectedInRedis.load(ordering: .acquiring) }

    /// Marks the device's record as written.
    func markConnectedInRedis() { connectedInRedis.store(true, ordering: .releasing) }

    init(
        appId: String,
        userId: String,
        deviceId: String,
        platform: Platform,
        scope: PresenceScope,
        eventLoop: any EventLoop,
        activity: AppActivity.Counters? = nil,
        clock: any NodeClock,
        makeHandler: (@Sendable (DeviceSession) -> DeviceChannelHandler)? = nil
    ) {
        self.clock = clock
        self.makeHandler = makeHandler
        self.connectionId = ConnectionId.make()
        self.appId = appId
        self.userId = userId
        self.deviceId = deviceId
        self.platform = platform
        self.scope = scope
        self.eventLoop = eventLoop
        self.activity = activity
        self.handler = NIOLoopBoundBox.makeBoxSendingValue(HandlerSlot<DeviceChannelHandler>.notMade, eventLoop: eventLoop)
        self.lastActivity = Atomic(clock.monotonicMs)
    }

    /// The session's handler, made on first use; nil once it is gone (or for a session without a socket). On the
    /// session's event loop only.
    var channelHandler: DeviceChannelHandler? {
        handler.value.handler { makeHandler?(self) }
    }

    /// Lets go of the handler (it and the session hold each other until then): after its channel closed, or when the
    /// connect was given up before the handler got a channel. On the session's event loop only.
    func releaseHandler() {
        handler.value.release()
    }

    /// Queues an event without flushing; returns the handler if it wrote, so the caller flushes it once per batch.
    /// On the session's event loop only.
    func deliver(_ event: StatusEvent) -> DeviceChannelHandler? {
        guard let handler = channelHandler, handler.deliver(event) else { return nil }
        activity?.eventsDelivered.add(1, ordering: .relaxed)
        return handler
    }

    /// Ends the session (the first reason wins); the socket closes within the close grace period.
    func end(_ reason: Ending) {
        eventLoop.execute { self.channelHandler?.end(reason, farewell: []) }
    }

    /// Sends `{"event": "kicked", "reason": ...}`, then closes; the device is already removed in Redis.
    func kick(reason: String) {
        let frame = WebSocketWire.text(DeviceFrames.kicked(reason))
        eventLoop.execute { self.channelHandler?.end(.removed, farewell: [frame]) }
    }

    /// Records a sign of life (any inbound bytes).
    func touch() {
        lastActivity.store(clock.monotonicMs, ordering: .relaxed)
    }

    /// Milliseconds since the last sign of life.
    var silenceMs: Int64 { clock.monotonicMs - lastActiveMs }

    /// The last sign of life, in the clock's ``NodeClock/monotonicMs``.
    var lastActiveMs: Int64 { lastActivity.load(ordering: .relaxed) }
}
