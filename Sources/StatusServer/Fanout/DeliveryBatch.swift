import CoreMetrics
import NIOCore
import StatusCore

/// Status events of one bus batch, grouped by the event loop of each recipient's channel.
///
/// ``send(through:counting:)`` gives each loop its share through the loop's ``LoopMailbox``: the loop writes every event to its
/// sockets without flushing, then flushes each socket once, so a device that receives several events costs one flush
/// (one `writev`).
struct DeliveryBatch {
    /// Per event loop: each event once, with the sessions on that loop that receive it.
    private var loops: [ObjectIdentifier: (loop: any EventLoop, items: [(StatusEvent, [DeviceSession])])] = [:]
    private var count = 0

    /// Adds one change for its recipients; each view of it is encoded once, here, and shared by all who get that view
    /// (SPEC §10.5: the own view, the public view, and the public view without `lastActiveAt`).
    mutating func add(_ change: StatusChange, to audience: Audience) {
        for (event, recipients) in Self.encodings(of: change, for: audience) { add(event, to: recipients) }
    }

    /// The events of one change: the own view for `audience.own`, the public view for `audience.seeing`, without
    /// `lastActiveAt` for `audience.masked` (SPEC §2 last-seen privacy); one encoding per group that has recipients,
    /// so three at most.
    static func encodings(of change: StatusChange, for audience: Audience) -> [(event: StatusEvent, recipients: Recipients)] {
        var result: [(event: StatusEvent, recipients: Recipients)] = []
        var record = change.record
        if !audience.own.isEmpty {
            result.append((StatusEvent(PresenceView.own.status(of: record, appDefault: .everyone)), audience.own))
        }
        guard !audience.seeing.isEmpty || !audience.masked.isEmpty else { return result }
        // Who may see lastActiveAt was decided when the recipients were split: here it is shown, or removed.
        record.lastSeenPrivacy = .everyone
        // Audience left out both sides of every block with the changed user: the public view, for a viewer on neither.
        var shown = PresenceView.of(record.status.userId, seenBy: nil, blocked: .none, isFriend: false).status(of: record, appDefault: .everyone)
        if !audience.seeing.isEmpty { result.append((StatusEvent(shown), audience.seeing)) }
        if !audience.masked.isEmpty {
            shown.lastActiveAt = nil
            result.append((StatusEvent(shown), audience.masked))
        }
        return result
    }

    /// Queues `event` for its recipients: each loop's share as a whole, no session touched here.
    mutating func add(_ event: StatusEvent, to recipients: Recipients) {
        for share in recipients.shares {
            loops[ObjectIdentifier(share.loop), default: (share.loop, [])].items.append((event, share.sessions))
        }
        count += recipients.count
    }

    /// Hands every loop its deliveries (``LoopMailbox``), counted in `delivered`; waits while a loop has more waiting
    /// than it may hold.
    mutating func send(through mailboxes: LoopMailboxes, counting delivered: Counter) async {
        guard count > 0 else { return }
        var full: [LoopMailbox] = []
        for (loop, items) in loops.values {
            let mailbox = mailboxes.of(loop)
            if mailbox.post(items) { full.append(mailbox) }
        }
        delivered.increment(by: count)
        loops = [:]
        count = 0
        for mailbox in full { await mailbox.belowLowWater() }
    }
}
