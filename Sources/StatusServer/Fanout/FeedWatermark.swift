import Synchronization

/// From when a node's bus feed may have missed messages: the moment a resynchronisation reads the apps' logs of recent
/// changes from (``FanoutService``, for the sessions of an app-wide scope, whom nothing else re-reads).
///
/// The feed is known whole when a batch without a gap is taken. A lost subscription connection
/// (``RedisClient/RedisPubSubEvent/lost(wholeUntil:)``) keeps the moment the feed was last whole before it (the earlier
/// of the last batch and the connection's last answered ping), until a resynchronisation that began after the loss
/// succeeds: on a cluster the other shards' connections keep delivering batches meanwhile, and those say nothing of the
/// lost one's channels. A pure value: the service keeps it under a lock and passes the node's clock in.
struct FeedWatermark: Sendable {
    /// When (epoch ms, the node's clock) a batch without a gap was last taken, or a resynchronisation that succeeded
    /// began.
    private(set) var wholeAtMs: Int64
    /// The earliest moment the feed was known whole at a loss that no resynchronisation has repaired yet.
    private(set) var lostSinceMs: Int64?
    /// How many losses were noted: a resynchronisation repairs the ones noted before it began.
    private var losses: UInt64 = 0

    init(nowMs: Int64) {
        wholeAtMs = nowMs
    }

    /// A batch without a gap was taken at `nowMs`.
    mutating func heard(atMs nowMs: Int64) {
        wholeAtMs = max(wholeAtMs, nowMs)
    }

    /// A subscription connection was lost, whose feed was known whole until `wholeUntilMs` (its last answered ping,
    /// ``RedisClient/SubscriptionPings``): a silent network is noticed a ping interval or two after it fell silent,
    /// while the other shards' batches went on moving ``wholeAtMs``.
    mutating func lost(wholeUntilMs: Int64) {
        losses += 1
        lostSinceMs = min(lostSinceMs ?? wholeAtMs, wholeAtMs, wholeUntilMs)
    }

    /// What a resynchronisation beginning at `nowMs` must look back to, and what to hand to
    /// ``resynchronised(_:)`` when it succeeds.
    func beginResync(atMs nowMs: Int64) -> Resync {
        Resync(sinceMs: min(lostSinceMs ?? wholeAtMs, wholeAtMs), startedAtMs: nowMs, losses: losses)
    }

    /// A resynchronisation succeeded: everything changed before it began was read. The losses noted before it began are
    /// repaired; one noted since keeps its moment for the next.
    mutating func resynchronised(_ resync: Resync) {
        wholeAtMs = max(wholeAtMs, resync.startedAtMs)
        if losses == resync.losses { lostSinceMs = nil }
    }

    /// A resynchronisation's view of the watermark when it began.
    struct Resync: Sendable, Equatable {
        /// The feed may have missed what was published after this moment (epoch ms, the node's clock).
        var sinceMs: Int64
        var startedAtMs: Int64
        var losses: UInt64
    }
}

/// The node's ``FeedWatermark``, shared by the bus connections' event loops (which note losses) and the fan-out's
/// consumer.
final class SharedFeedWatermark: Sendable {
    let state: Mutex<FeedWatermark>

    init(_ watermark: FeedWatermark) {
        self.state = Mutex(watermark)
    }
}
