/// How ``WebhookDispatcher`` paces delivery. The defaults are the production values; tests shorten some of them.
struct WebhookDispatchSettings: Sendable {
    /// Deliveries in flight at once on one node.
    var maxInFlight = 16
    /// How long a receiver has to answer (SPEC §8: 2 s); past it the attempt counts as failed.
    var timeout: Duration = .seconds(2)
    /// The delay before the first retry; each further retry doubles it, up to ``maxBackoff``.
    var baseBackoff: Duration = .milliseconds(200)
    /// The longest delay between two attempts.
    var maxBackoff: Duration = .seconds(60)
    /// Attempts (the first one included) before an event is dropped: with the defaults, about 7 minutes of retries.
    var maxAttempts = 15
    /// How long the dispatcher waits before looking again when it found nothing to do.
    var idlePoll: Duration = .milliseconds(200)
    /// A stream entry pending this long with a consumer is taken over (its node died mid-delivery).
    var claimIdle: Duration = .seconds(30)
    /// How often pending entries of dead consumers are looked for.
    var claimEvery: Duration = .seconds(5)
    /// How long a retry taken by a node stays hidden from the others; it comes back if that node dies mid-delivery.
    var retryLease: Duration = .seconds(30)

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
