/// Which of the channels nobody on the node needs any more a housekeeping pass unsubscribes: only those that were
/// unwatched at the pass before as well. A channel stays subscribed at least one pass period (a third of the lease)
/// after its last session left: a device that reconnects meanwhile (a flaky network, a churning fleet, a node's
/// devices coming back after a restart elsewhere) finds its user's channel still confirmed, so its connect reads its
/// relationships with its admission and subscribes to nothing. Without the hold, a pass dropped every channel whose
/// device was between its departure and its return at that moment: under churn at the node's limit, one unsubscribe,
/// one subscribe and one relationships read for about every other connect.
///
/// While connects run late (an upgrade waited in the node's queue for ``lateConnectMs`` or more since the pass before),
/// a channel is held for up to ``latePasses`` passes instead: a device that left and came straight back may still be
/// waiting for its turn, and dropping its channel then would make its connect dearer (an unsubscribe now, a subscribe
/// with it) just when the node has least to spare, so that a node that fell behind under a burst stayed behind. The
/// hold is still bounded: a channel unwatched for that many passes goes whatever the queue.
///
/// A pure value: the fan-out feeds it what each pass found unwatched and drops what it answers.
struct UnwatchedChannelHold: Sendable, Equatable {
    /// How long an upgrade waits for its turn before the node counts as running late.
    static let lateConnectMs: Int64 = 1_000
    /// The passes a channel is held for, at most, while connects run late (five lease periods' thirds: 25 s with the
    /// default lease).
    static let latePasses = 5

    /// Channels found unwatched and kept subscribed, with the number of passes in a row that found them so.
    private(set) var held: [String: Int] = [:]

    /// Whether the pass that finds `channel` unwatched keeps it subscribed.
    func keeps(_ channel: String, connectsLate: Bool) -> Bool {
        (held[channel] ?? 0) < (connectsLate ? Self.latePasses : 1)
    }

    /// A pass found `unwatched` (channels subscribed that no session here needs now): answers the ones to drop (those
    /// ``keeps(_:connectsLate:)`` does not keep) and holds the others until the next pass. A held channel watched again
    /// is simply no longer held.
    mutating func pass(unwatched: Set<String>, connectsLate: Bool) -> Set<String> {
        var drop: Set<String> = []
        var next: [String: Int] = [:]
        for channel in unwatched {
            if keeps(channel, connectsLate: connectsLate) {
                next[channel] = (held[channel] ?? 0) + 1
            } else {
                drop.insert(channel)
            }
        }
        held = next
        return drop
    }

    /// Whether a pass must run even if no interest went away since the last: the held channels are due then.
    var isHolding: Bool { !held.isEmpty }
}
