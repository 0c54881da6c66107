/// A bounded map whose entries count for `ttl` only. Pure (the caller passes the time), not synchronized (the caller
/// holds it in a lock). Used for answers that are cheap to be briefly wrong about and costly to ask Redis for on every
/// request, such as "this appId does not exist".
struct ShortLivedCache<Value: Sendable>: Sendable {
    /// How long an entry counts.
    let ttl: Duration
    /// The most entries held: at the bound, expired entries go first, then the oldest half.
    let capacity: Int
    private var entries: [String: (value: Value, stored: ContinuousClock.Instant)] = [:]

    init(ttl: Duration, capacity: Int) {
        self.ttl = ttl
        self.capacity = max(1, capacity)
    }

    /// Entries held, expired ones included.
    var count: Int { entries.count }

    /// The value stored for `key` within the last `ttl`.
    func value(for key: String, now: ContinuousClock.Instant) -> Value? {
        guard let entry = entries[key], now - entry.stored < ttl else { return nil }
        return entry.value
    }

    /// Stores `value` for `key`, making room first when the cache is full.
    mutating func store(_ value: Value, for key: String, now: ContinuousClock.Instant) {
        if entries[key] == nil, entries.count >= capacity {
            entries = entries.filter { now - $0.value.stored < ttl }
            if entries.count >= capacity {
                let cutoff = entries.values.map(\.stored).sorted()[entries.count / 2]
                entries = entries.filter { $0.value.stored > cutoff }
            }
        }
        entries[key] = (value, now)
    }

    /// Forgets `key`.
    mutating func remove(_ key: String) {
        entries.removeValue(forKey: key)
    }
}
