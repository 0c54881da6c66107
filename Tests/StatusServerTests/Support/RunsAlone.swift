import Testing

extension Tag {
    /// A test that needs the machine to itself: it holds a node to a bound in real time that a busy 2-core machine can
    /// break (a lease that must not lapse, a recovery within the lease, 503 within 2 s of a silent Redis, a drain's
    /// spread, an expiry cleared within 4 s of another node's crash, a subscription routed within 300 ms). Counters need
    /// no such tag: each node has its own registry (``NodeMetrics``). `scripts/test` finds the tests tagged so in the
    /// sources (`scripts/lib/alone-tests`), skips them in its parallel passes and runs them afterwards, one at a time,
    /// with nothing else running.
    @Tag static var runsAlone: Self
}
