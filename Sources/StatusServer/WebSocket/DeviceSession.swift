import Foundation
import StatusCore
import Synchronization

/// One connected device on this node: who it is, what it listens to, its bounded outbound queue and its last sign
/// of life.
final class DeviceSession: Sendable {
    /// What the writer sends.
    enum Outbound: Sendable {
        case text(String)
        /// Sends `{"event": "kicked", "reason": ...}` and closes.
        case kick(reason: String)
    }

    /// How the session ended, which decides what its device becomes.
    enum Ending: Sendable, Equatable {
        /// The socket closed or dropped: the device goes (offline if last).
        case disconnected
        /// Silent for longer than the app's heartbeat timeout.
        case timedOut
        /// Could not keep up with its events.
        case tooSlow
        /// Already removed in Redis (logout, kick, replaced, deleted): nothing more to write.
        case removed
    }

    let connectionId: String
    let appId: String
    let userId: String
    let deviceId: String
    let platform: Platform
    let scope: PresenceScope
    let outbound: AsyncStream<Outbound>
    private let continuation: AsyncStream<Outbound>.Continuation
    private let lastActivity: Atomic<Int64>
    private let ending = Mutex<Ending?>(nil)
    private let dropConnection: @Sendable () -> Void

    /// Creates a session; `dropConnection` closes the socket at once, without a close handshake (for a device that does
    /// not read, whose socket buffer is full).
    init(
        appId: String,
        userId: String,
        deviceId: String,
        platform: Platform,
        scope: PresenceScope,
        queueLimit: Int,
        dropConnection: @escaping @Sendable () -> Void
    ) {
        self.dropConnection = dropConnection
        self.connectionId = UUID().uuidString
        self.appId = appId
        self.userId = userId
        self.deviceId = deviceId
        self.platform = platform
        self.scope = scope
        (self.outbound, self.continuation) = AsyncStream.makeStream(of: Outbound.self, bufferingPolicy: .bufferingOldest(queueLimit))
        self.lastActivity = Atomic(Self.monotonicMs())
    }

    /// Queues a message; a full queue ends the session as too slow (it never blocks and never grows past the limit).
    func send(_ message: Outbound) {
        switch continuation.yield(message) {
        case .dropped:
            end(.tooSlow)
        case .enqueued, .terminated:
            break
        @unknown default:
            break
        }
    }

    /// Ends the session (the first reason wins) and closes the queue.
    func end(_ reason: Ending) {
        let first = ending.withLock { current -> Bool in
            guard current == nil else { return false }
            current = reason
            return true
        }
        guard first else { return }
        continuation.finish()
        if reason == .tooSlow { dropConnection() }
    }

    /// Sends a `kicked` event, then closes; the device is already removed in Redis.
    func kick(reason: String) {
        let first = ending.withLock { current -> Bool in
            guard current == nil else { return false }
            current = .removed
            return true
        }
        if first {
            continuation.yield(.kick(reason: reason))
            continuation.finish()
        }
    }

    /// Why the session ended, if it did.
    var endedBecause: Ending? { ending.withLock { $0 } }

    /// Records a sign of life (any inbound bytes).
    func touch() {
        lastActivity.store(Self.monotonicMs(), ordering: .relaxed)
    }

    /// Milliseconds since the last sign of life.
    var silenceMs: Int64 { Self.monotonicMs() - lastActivity.load(ordering: .relaxed) }

    private static func monotonicMs() -> Int64 {
        Int64(DispatchTime.now().uptimeNanoseconds / 1_000_000)
    }
}
