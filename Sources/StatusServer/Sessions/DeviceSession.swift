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
    private let handler: NIOLoopBoundBox<DeviceChannelHandler?>
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
        clock: any NodeClock
    ) {
        self.clock = clock
        self.connectionId = ConnectionId.make()
        self.appId = appId
        self.userId = userId
        self.deviceId = deviceId
        self.platform = platform
        self.scope = scope
        self.eventLoop = eventLoop
        self.activity = activity
        self.handler = NIOLoopBoundBox.makeEmptyBox(valueType: DeviceChannelHandler.self, eventLoop: eventLoop)
        self.lastActivity = Atomic(clock.monotonicMs)
    }

    /// The session's handler, once created; on the session's event loop only.
    var channelHandler: DeviceChannelHandler? {
        get { handler.value }
        set { handler.value = newValue }
    }

    /// Queues an event without flushing; returns the handler if it wrote, so the caller flushes it once per batch.
    /// On the session's event loop only.
    func deliver(_ event: StatusEvent) -> DeviceChannelHandler? {
        guard let handler = handler.value, handler.deliver(event) else { return nil }
        activity?.eventsDelivered.add(1, ordering: .relaxed)
        return handler
    }

    /// Ends the session (the first reason wins); the socket closes within the close grace period.
    func end(_ reason: Ending) {
        let handler = self.handler
        eventLoop.execute { handler.value?.end(reason, farewell: []) }
    }

    /// Sends `{"event": "kicked", "reason": ...}`, then closes; the device is already removed in Redis.
    func kick(reason: String) {
        let handler = self.handler
        let frame = WebSocketWire.text(DeviceFrames.kicked(reason))
        eventLoop.execute { handler.value?.end(.removed, farewell: [frame]) }
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
