import Synchronization

/// What this node last learnt of each user's rate-limit window, so that a call likely to be refused is admitted before
/// its reads are sent (SPEC §10.7: a refused call costs Redis no more than the check that refused it).
///
/// getUserStatus sends its reads in the rate-limit script's own round trip while the caller has calls left; once an
/// admission said that none is left (or refused a call), the caller's calls are admitted first, alone, until the
/// window has had time to move. The hint only chooses between one round trip and two: the decision stays the
/// script's, so a stale hint costs a round trip or, across nodes, the reads of a call that another node's calls
/// pushed over the limit, never a wrong answer.
///
/// Bounded per app and in all (SPEC §10.7: one app cannot starve another): an app keeps at most
/// ``AdmissionHintTable/perAppCapacity`` users at their limit, and the node at most ``AdmissionHintTable/capacity``;
/// past a bound, expired hints go first, then no new hint is kept (those calls pipeline, as before).
final class AdmissionHints: Sendable {
    private let table = Mutex(AdmissionHintTable())

    /// Whether a call of `operation` by the user should be admitted before its reads are sent.
    func admitFirst(appId: String, userId: String, operation: RateLimitedOperation, now: ContinuousClock.Instant) -> Bool {
        table.withLock { $0.admitFirst(AdmissionHintTable.Key(userId: userId, operation: operation), of: appId, now: now) }
    }

    /// Records an admission's outcome: `callsLeft` after an accepted call, or `retryAfter` of a refused one.
    func record(
        appId: String,
        userId: String,
        operation: RateLimitedOperation,
        callsLeft: Int?,
        retryAfter: Duration,
        now: ContinuousClock.Instant
    ) {
        table.withLock { table in
            let key = AdmissionHintTable.Key(userId: userId, operation: operation)
            if let callsLeft, callsLeft > 0 {
                table.forget(key, of: appId)
            } else {
                table.remember(key, of: appId, until: now + retryAfter, now: now)
            }
        }
    }
}

/// The hints of ``AdmissionHints`` as a pure value: per app, each user and operation at the limit until a moment.
struct AdmissionHintTable: Sendable {
    /// Users at their limit remembered at most per app.
    static let perAppCapacity = 1_000
    /// Users at their limit remembered at most on the node.
    static let capacity = 10_000

    struct Key: Hashable, Sendable {
        var userId: String
        var operation: RateLimitedOperation
    }

    private var apps: [String: [Key: ContinuousClock.Instant]] = [:]
    /// Hints held, all apps together.
    private(set) var count = 0
    /// When every app's expired hints were last dropped: at most once a second, however full the table stays.
    private var lastSweep: ContinuousClock.Instant?

    /// Hints held for `appId`.
    func count(of appId: String) -> Int { apps[appId]?.count ?? 0 }

    mutating func admitFirst(_ key: Key, of appId: String, now: ContinuousClock.Instant) -> Bool {
        guard let until = apps[appId]?[key] else { return false }
        if until <= now {
            forget(key, of: appId)
            return false
        }
        return true
    }

    mutating func forget(_ key: Key, of appId: String) {
        guard apps[appId]?.removeValue(forKey: key) != nil else { return }
        count -= 1
        if apps[appId]?.isEmpty == true { apps[appId] = nil }
    }

    mutating func remember(_ key: Key, of appId: String, until: ContinuousClock.Instant, now: ContinuousClock.Instant) {
        if apps[appId]?[key] != nil {
            apps[appId]?[key] = until
            return
        }
        if count(of: appId) >= Self.perAppCapacity { dropExpired(of: appId, now: now) }
        if count >= Self.capacity, lastSweep.map({ now - $0 >= .seconds(1) }) ?? true {
            lastSweep = now
            for appId in Array(apps.keys) { dropExpired(of: appId, now: now) }
        }
        guard count(of: appId) < Self.perAppCapacity, count < Self.capacity else { return }
        apps[appId, default: [:]][key] = until
        count += 1
    }

    private mutating func dropExpired(of appId: String, now: ContinuousClock.Instant) {
        guard let hints = apps[appId] else { return }
        let kept = hints.filter { $0.value > now }
        count -= hints.count - kept.count
        apps[appId] = kept.isEmpty ? nil : kept
    }
}
