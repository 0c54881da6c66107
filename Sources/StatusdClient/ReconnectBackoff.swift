/// Exponential backoff with jitter between connects: attempt n waits a random delay in [ceiling/2, ceiling], with
/// ceiling = min(max, min × 2ⁿ), so that devices dropped together by one server do not all come back at once.
struct ReconnectBackoff: Sendable {
    var minimum: Duration
    var maximum: Duration

    func delay(attempt: Int, random: Double = Double.random(in: 0...1)) -> Duration {
        let minimumMs = Double(minimum.components.seconds) * 1000 + Double(minimum.components.attoseconds) / 1e15
        let maximumMs = Double(maximum.components.seconds) * 1000 + Double(maximum.components.attoseconds) / 1e15
        let ceiling = min(maximumMs, minimumMs * pow2(attempt))
        return .milliseconds(Int64((ceiling / 2 + random * ceiling / 2).rounded()))
    }

    /// The delay before reconnecting to another node after 1012 or 1013: at once, spread over half the minimum.
    func moveDelay(random: Double = Double.random(in: 0...1)) -> Duration {
        let minimumMs = Double(minimum.components.seconds) * 1000 + Double(minimum.components.attoseconds) / 1e15
        return .milliseconds(Int64((random * minimumMs / 2).rounded()))
    }

    private func pow2(_ exponent: Int) -> Double {
        exponent >= 62 ? Double.greatestFiniteMagnitude : Double(1 << exponent)
    }
}
