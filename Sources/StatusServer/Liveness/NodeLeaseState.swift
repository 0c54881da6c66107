import Synchronization

/// The node's side of its lease (SPEC §9, §10.7, docs/reliability.md), as a pure value: renewals in, what to do out. No
/// clock and no Redis inside, so the rules are tested alone (`NodeLeaseStateTests`); ``HousekeepingService`` feeds it
/// the outcome of each renewal with the moments it was sent and came back, and asks it before each of its own passes.
///
/// - A renewal holds the lease for a lease from when it was *sent* (it cannot have reached Redis earlier), so the lease
///   certainly runs until the last successful renewal's send plus a lease, and may have expired from then on.
/// - A node whose renewals keep failing past that moment cannot reach Redis: survivors are filing its devices
///   offline while their sockets are still open here. It is **cut off**: it closes its device sockets with 1013 (try
///   again later) so that clients reconnect through a healthy node, and closes any it still holds on each failed
///   renewal until one succeeds (SPEC §9: no device stays connected to a node that shows it offline).
/// - A node that was only stalled (it did not run, so no renewal failed) finds out from a renewal that succeeds but
///   says the lease had expired: the live sessions are checked against Redis (and re-filed) on the next
///   ``checksAfterLoss`` lease-period passes, since a survivor's cleanup may still be running when the lease comes back.
/// - While the lease may have lapsed (or its loss is being repaired), a device record that vanished may be the
///   survivors' filing, not a kick: ``mayHaveBeenFiled(at:)`` tells the bus-gap audit not to take it for one.
/// - How late a renewal came (beyond its period) is the lease's health: a node whose renewals lag by a lease loses it
///   although it is alive (`statusd_lease_renewal_lag_seconds`).
struct NodeLeaseState: Sendable, Equatable {
    /// The lease-period passes that check live sessions after a lost lease.
    static let checksAfterLoss = 3

    /// How often a renewal is due.
    let period: Duration
    /// How long a renewal holds the lease.
    let lease: Duration
    /// When the last renewal came back.
    private(set) var lastRenewal: ContinuousClock.Instant?
    /// When the last successful renewal was sent: the lease is held until this plus ``lease``.
    private(set) var lastHeldFrom: ContinuousClock.Instant?
    /// Passes left that check live sessions against Redis.
    private(set) var refileChecksLeft = 0
    /// Renewals have failed past the lease: the node closes its devices until one succeeds.
    private(set) var isCutOff = false

    init(period: Duration, lease: Duration) {
        self.period = period
        self.lease = lease
    }

    /// What a renewal's outcome asks for.
    struct Renewed: Sendable, Equatable {
        /// How much later than its period the renewal came (zero for the first, or one on time).
        var lag: Duration
        /// The lease had expired: live sessions are to be checked from the next pass on.
        var lost: Bool
    }

    /// A renewal sent at `sent` came back at `now` with `outcome`.
    mutating func renewed(_ outcome: NodeRegistry.Renewal, sent: ContinuousClock.Instant, at now: ContinuousClock.Instant) -> Renewed {
        let lag = lastRenewal.map { max(.zero, now - $0 - period) } ?? .zero
        lastRenewal = now
        lastHeldFrom = sent
        isCutOff = false
        let lost = outcome == .lost
        if lost { refileChecksLeft = Self.checksAfterLoss }
        return Renewed(lag: lag, lost: lost)
    }

    /// A renewal failed at `now` (Redis did not answer, or refused): whether the node is cut off, and so closes its
    /// device sockets now. Never before a first successful renewal (the node holds no device without one).
    mutating func renewalFailed(at now: ContinuousClock.Instant) -> Bool {
        guard let lastHeldFrom, now >= lastHeldFrom + lease else { return false }
        isCutOff = true
        return true
    }

    /// When the next renewal is due after one that failed at `now`: soon, so that the moment the lease runs out is met
    /// within ``retryAfterFailure`` (a renewal that waits for a silent Redis takes up to the command timeout itself).
    static let retryAfterFailure: Duration = .milliseconds(250)

    /// Whether survivors may have filed this node's devices: the lease may have run out (or did, and the re-filing is
    /// not over). A vanished device record is then no proof of a kick.
    func mayHaveBeenFiled(at now: ContinuousClock.Instant) -> Bool {
        if isCutOff || refileChecksLeft > 0 { return true }
        guard let lastHeldFrom else { return false }
        return now >= lastHeldFrom + lease
    }

    /// Whether this lease-period pass checks the live sessions; counts the pass.
    mutating func takeRefileCheck() -> Bool {
        guard refileChecksLeft > 0 else { return false }
        refileChecksLeft -= 1
        return true
    }
}

/// The lease state shared by the housekeeping's loops (renewals feed it, the work loop asks it whether to re-file)
/// and the fan-out's bus-gap audit (which asks whether a vanished record may be the survivors' filing).
final class SharedLease: Sendable {
    let state: Mutex<NodeLeaseState>

    init(_ state: NodeLeaseState) {
        self.state = Mutex(state)
    }
}
