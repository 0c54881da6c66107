import Synchronization

/// What this node last learnt of each user's rate-limit window, so that a call likely to be refused is admitted before
/// its reads are sent (SPEC §10.7: a refused call costs Redis no more than the check that refused it).
///
/// getUserStatus sends its reads in the rate-limit script's own round trip while the caller has calls left; once an
/// admission said that none is left (or refused a call), the caller's calls are admitted first, alone, until the
/// window has had time to move. The hint only chooses between one round trip and two: the decision stays the
/// script's, so a stale hint costs a round trip or, across nodes, the reads of a call that another node's calls
/// pushed over the limit, never a wrong answer. Bounded: past ``capacity`` users at their limit no new hint is
/// kept (those calls pipeline, as before).
final class AdmissionHints: Sendable {
    /// Users at their limit remembered at most.
    static let capacity = 10_000

    private struct Key: Hashable {
        var appId: String
        var userId: String
        var operation: RateLimitedOperation
    }

    private let atLimitUntil = Mutex<[Key: ContinuousClock.Instant]>([:])

    /// Whether a call of `operation` by the user should be admitted before its reads are sent.
    func admitFirst(appId: String, userId: String, operation: RateLimitedOperation, now: ContinuousClock.Instant) -> Bool {
        atLimitUntil.withLock { hints in
            let key = Key(appId: appId, userId: userId, operation: operation)
            guard let until = hints[key] else { return false }
            if until <= now {
                hints[key] = nil
                return false
            }
            return true
        }
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
        atLimitUntil.withLock { hints in
            let key = Key(appId: appId, userId: userId, operation: operation)
            if let callsLeft, callsLeft > 0 {
                hints[key] = nil
                return
            }
            if hints[key] == nil, hints.count >= Self.capacity {
                hints = hints.filter { $0.value > now }
                guard hints.count < Self.capacity else { return }
            }
            hints[key] = now + retryAfter
        }
    }
}
