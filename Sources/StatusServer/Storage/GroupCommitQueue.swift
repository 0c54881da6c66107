/// The decisions of a group commit, with no I/O: writes to one key group (an app's online index) that callers make
/// while an earlier write to it is in flight wait, and go out together as the next write, led by the first of them.
///
/// At most one write per key group is in flight; a caller that arrives when none is leads its own write, so a lone
/// write waits for nothing (on a busy node a leader may first linger a moment and ``gather(upTo:)`` the writes that
/// arrived meanwhile: ``GroupCommitLinger``). A batch holds at most ``maxBatch`` members; the rest wait for the one
/// after. No member waits for more than the write in flight (with its linger) and its own.
struct GroupCommitQueue<Member> {
    /// The most members written in one batch.
    let maxBatch: Int
    /// Whether a batch is being written.
    private(set) var inFlight = false
    private var waiting: [Member] = []

    init(maxBatch: Int) {
        precondition(maxBatch > 0)
        self.maxBatch = maxBatch
    }

    /// What a member arriving is to do.
    enum Arrival {
        /// Write this batch (the member alone) now.
        case lead([Member])
        /// Wait: it is in the next batch, which ``finished()`` hands to its first member.
        case wait
    }

    mutating func arrive(_ member: Member) -> Arrival {
        if inFlight {
            waiting.append(member)
            return .wait
        }
        inFlight = true
        return .lead([member])
    }

    /// The batch in flight is written (or failed): the next batch, to be written by its first member, or nil when
    /// nobody waits (the queue is then idle).
    mutating func finished() -> [Member]? {
        guard !waiting.isEmpty else {
            inFlight = false
            return nil
        }
        let count = min(maxBatch, waiting.count)
        let batch = Array(waiting.prefix(count))
        waiting.removeFirst(count)
        return batch
    }

    /// Up to `count` members waiting, taken into the batch of the write about to go (its leader lingered for them):
    /// the oldest first, as ``finished()`` would have handed them on.
    mutating func gather(upTo count: Int) -> [Member] {
        let taken = min(max(0, count), waiting.count)
        let members = Array(waiting.prefix(taken))
        waiting.removeFirst(taken)
        return members
    }

    /// Nothing in flight and nobody waiting.
    var isIdle: Bool { !inFlight && waiting.isEmpty }

    /// Members waiting for a later batch.
    var waitingCount: Int { waiting.count }
}
