import NIOCore

/// An event from a subscription connection.
public enum RedisPubSubEvent: Sendable {
    /// A message published on one of the subscribed channels.
    case message(channel: String, payload: [UInt8])
    /// Sent after every successful (re)subscription, so the consumer can resynchronise what it may have missed.
    case subscribed
    /// A subscription connection was lost: what was published on its channels after `wholeUntil` (this process's
    /// monotonic clock: the last ping it answered, ``SubscriptionPings``) until the next ``subscribed`` may be missed.
    /// Sent once per lost connection (and, for sharded channels, once per set of channels whose slot moved), so the
    /// consumer knows from when it may have missed messages.
    case lost(wholeUntil: NIODeadline)
}
