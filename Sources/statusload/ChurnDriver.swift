/// Drops random connected devices at a target rate; each dropped device closes its socket and reconnects at once, so
/// the node sees `rate` disconnect + connect cycles per second.
struct ChurnDriver: Sendable {
    let registry: DeviceRegistry
    let stats: LoadStats

    func run(rate: Double, seconds: Double, seed: UInt64) async {
        guard rate > 0 else { return }
        var generator = SplitMix64(seed: seed ^ 0xC4C4)
        let total = Int(rate * seconds)
        let start = ContinuousClock.now
        for index in 0..<total {
            let deadline = start + .nanoseconds(Int64(Double(index) / rate * 1e9))
            if deadline > .now { try? await Task.sleep(until: deadline, clock: .continuous) }
            if Task.isCancelled { return }
            guard let pick = registry.pick(node: nil, using: &generator) else { continue }
            stats.recordChurnRequest()
            pick.link.drop()
        }
    }
}
