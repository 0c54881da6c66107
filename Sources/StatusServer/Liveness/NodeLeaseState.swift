/// The node's side of its lease (SPEC §10.7, docs/reliability.md), as a pure value: renewals in, what to do out. No
/// clock and no Redis inside, so the rules are tested alone (`NodeLeaseStateTests`); ``HousekeepingService`` feeds it
/// the outcome of each renewal with the moment it came back, and asks it before each of its own passes.
///
/// - A renewal that finds the lease had expired means other nodes may have filed this node's devices gone: the live
///   sessions are checked against Redis (and re-filed) on the next ``checksAfterLoss`` lease-period passes, since a
///   survivor's cleanup may still be running when the lease comes back.
/// - How late a renewal came (beyond its period) is the lease's health: a node whose renewals lag by a lease loses it
///   although it is alive (`statusd_lease_renewal_lag_seconds`).
struct NodeLeaseState: Sendable, Equatable {
    /// The lease-period passes that check live sessions after a lost lease.
    static let checksAfterLoss = 3

    /// How often a renewal is due.
    let period: Duration
    /// When the last renewal came back.
    private(set) var lastRenewal: ContinuousClock.Instant?
    /// Passes left that check live sessions against Redis.
    private(set) var refileChecksLeft = 0

    init(period: Duration) {
        self.period = period
    }

    /// What a renewal's outcome asks for.
    struct Renewed: Sendable, Equatable {
        /// How much later than its period the renewal came (zero for the first, or one on time).
        var lag: Duration
        /// The lease had expired: live sessions are to be checked from the next pass on.
        var lost: Bool
    }

    /// A renewal came back at `now` with `outcome`.
    mutating func renewed(_ outcome: NodeRegistry.Renewal, at now: ContinuousClock.Instant) -> Renewed {
        let lag = lastRenewal.map { max(.zero, now - $0 - period) } ?? .zero
        lastRenewal = now
        let lost = outcome == .lost
        if lost { refileChecksLeft = Self.checksAfterLoss }
        return Renewed(lag: lag, lost: lost)
    }

    /// Whether this lease-period pass checks the live sessions; counts the pass.
    mutating func takeRefileCheck() -> Bool {
        guard refileChecksLeft > 0 else { return false }
        refileChecksLeft -= 1
        return true
    }
}
