/// Which of the channels nobody on the node needs any more a housekeeping pass unsubscribes: only those that were
/// unwatched at the pass before as well. A channel stays subscribed at least one pass period (a third of the lease)
/// after its last session left: a device that reconnects meanwhile (a flaky network, a churning fleet, a node's
/// devices coming back after a restart elsewhere) finds its user's channel still confirmed, so its connect reads its
/// relationships with its admission and subscribes to nothing. Without the hold, a pass dropped every channel whose
/// device was between its departure and its return at that moment: under churn at the node's limit, one unsubscribe,
/// one subscribe and one relationships read for about every other connect.
///
/// A pure value: the fan-out feeds it what each pass found unwatched and drops what it answers.
struct UnwatchedChannelHold: Sendable, Equatable {
    /// Channels found unwatched at the last pass and kept subscribed for one more.
    private(set) var held: Set<String> = []

    /// A pass found `unwatched` (channels subscribed that no session here needs now): answers the ones to drop (found
    /// unwatched at the pass before too) and holds the others until the next pass. A held channel watched again is
    /// simply no longer held.
    mutating func pass(unwatched: Set<String>) -> Set<String> {
        let drop = unwatched.intersection(held)
        held = unwatched.subtracting(drop)
        return drop
    }

    /// Whether a pass must run even if no interest went away since the last: the held channels are due then.
    var isHolding: Bool { !held.isEmpty }
}
