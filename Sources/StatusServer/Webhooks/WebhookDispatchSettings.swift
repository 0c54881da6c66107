/// How ``WebhookDispatcher`` paces delivery and how much ``WebhookQueue`` keeps. The defaults are the production values;
/// tests shorten some of them.
struct WebhookDispatchSettings: Sendable {
    /// Deliveries in flight at once on one node.
    var maxInFlight = 64
    /// Deliveries of one app in flight at once on one node: an app whose receiver hangs holds at most this many slots
    /// (each for the 2 s timeout), so the other apps' events find free slots at once (SPEC §10.7).
    var maxInFlightPerApp = 4
    /// The most undelivered events one app may have queued; past it the oldest are dropped (SPEC §10.7: 100,000).
    var maxPendingPerApp = 100_000
    /// How long a receiver has to answer (SPEC §8: 2 s); past it the attempt counts as failed.
    var timeout: Duration = .seconds(2)
    /// The delay before the first retry; each further retry doubles it, up to ``maxBackoff``.
    var baseBackoff: Duration = .milliseconds(200)
    /// The longest delay between two attempts.
    var maxBackoff: Duration = .seconds(60)
    /// Attempts (the first one included) before an event is dropped: with the defaults, about 7 minutes of retries.
    var maxAttempts = 15
    /// How long the dispatcher waits before looking again when it found nothing to do.
    var idlePoll: Duration = .milliseconds(100)
    /// How long a read of the index of apps with queued events is used for the rounds that follow (started by finished
    /// deliveries) before it is read again; an event queued on this node makes it be read again at once.
    var indexFreshness: Duration = .milliseconds(20)
    /// The longest an app whose events are all in flight or waiting for a retry is left unvisited: an event queued for
    /// it meanwhile waits no longer than this.
    var maxSkip: Duration = .milliseconds(500)
    /// How long an event taken by a node stays hidden from the others; it comes back if that node dies mid-delivery.
    var lease: Duration = .seconds(30)
    /// How often every app's queue is checked against the index of apps with queued events (an addition to the index
    /// that failed after its event was queued, e.g. Redis went away between the two).
    var reindexEvery: Duration = .seconds(60)

    /// The delay after failed attempt number `attempt` (0 for the first attempt).
    func backoff(afterAttempt attempt: Int) -> Duration {
        let base = baseBackoff.inMilliseconds
        let cap = maxBackoff.inMilliseconds
        let shift = min(max(attempt, 0), 32)
        let delay = base > (cap >> shift) ? cap : min(cap, base << shift)
        return .milliseconds(delay)
    }
}

extension Duration {
    /// The duration in whole milliseconds.
    var inMilliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
