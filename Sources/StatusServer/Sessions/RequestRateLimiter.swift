/// The per-socket request limit of SPEC §7 ("at most 50 request frames per second per socket, a burst of 100"), as a
/// token bucket over an injected clock, so it is tested without waiting.
struct RequestRateLimiter: Sendable, Equatable {
    /// Tokens added per second.
    let ratePerSecond: Int
    /// The most tokens the bucket holds.
    let burst: Int
    /// Tokens now, in thousandths (integer arithmetic: no drift).
    private var milliTokens: Int64
    /// When the bucket was last refilled, in milliseconds of the caller's clock.
    private var refilledAtMs: Int64

    init(ratePerSecond: Int = 50, burst: Int = 100, nowMs: Int64) {
        self.ratePerSecond = ratePerSecond
        self.burst = burst
        self.milliTokens = Int64(burst) * 1000
        self.refilledAtMs = nowMs
    }

    /// Takes one token. Returns nil when the request may run, or the milliseconds until a token is back.
    mutating func admit(nowMs: Int64) -> Int64? {
        let elapsed = max(0, nowMs - refilledAtMs)
        milliTokens = min(Int64(burst) * 1000, milliTokens + elapsed * Int64(ratePerSecond))
        refilledAtMs = nowMs
        if milliTokens >= 1000 {
            milliTokens -= 1000
            return nil
        }
        let missing = 1000 - milliTokens
        return (missing + Int64(ratePerSecond) - 1) / Int64(ratePerSecond)
    }
}
