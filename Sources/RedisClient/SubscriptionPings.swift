import NIOCore

/// The pings of a subscription connection, and what their answers prove: a pure value, kept by the connection's
/// handler on its event loop.
///
/// A connection in subscribed mode is quiet when nothing is published, so silence alone says nothing; a ping does.
/// Redis answers commands and delivers messages on one connection in order: the answer to a ping sent at `t` comes
/// after every message published before the ping reached Redis, so the connection's feed is known whole up to `t`.
/// When the connection is lost, what was published since the last answered ping may have been missed, and that moment
/// (``wholeUntil``), not the moment the loss was noticed, is where a consumer's repair must look back to: a silent
/// network is noticed only an interval or two later.
public struct SubscriptionPings: Sendable {
    /// Everything published before this moment reached the connection: the sending of the last ping answered, or the
    /// moment the connection sent its subscriptions.
    public private(set) var wholeUntil: NIODeadline
    /// When the ping still unanswered was sent.
    private var outstanding: NIODeadline?

    /// A connection that sent its subscriptions at `subscribedAt`.
    public init(subscribedAt: NIODeadline) {
        self.wholeUntil = subscribedAt
    }

    /// What to do when the ping interval elapses.
    public enum Tick: Equatable, Sendable {
        /// Send a ping now.
        case ping
        /// The last ping is still unanswered a whole interval later: the connection is half-open, or Redis is stuck.
        case silent
    }

    /// The ping interval elapsed at `now`.
    public mutating func tick(at now: NIODeadline) -> Tick {
        guard self.outstanding == nil else { return .silent }
        self.outstanding = now
        return .ping
    }

    /// The answer to the outstanding ping arrived.
    public mutating func answered() {
        guard let sent = self.outstanding else { return }
        self.wholeUntil = max(self.wholeUntil, sent)
        self.outstanding = nil
    }
}
