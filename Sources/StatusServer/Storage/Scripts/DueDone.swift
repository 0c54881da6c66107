import RedisClient

/// The twin of `Scripts/due_done.lua` (SPEC §10.2 and §10.3): ends the calling node's leases of a due-time index, and
/// puts the entries whose moment has not come back into the index at it, never over an earlier entry written meanwhile.
enum DueDone: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.dueDone }

    typealias Keys = DueIndexKeys

    /// ARGV: the lease's score, then pairs of userId and when the entry falls due (epoch ms; nil: handled, not put
    /// back).
    struct Arguments: ScriptInput {
        var leaseScore: Int64
        var entries: [(userId: String, dueAt: Int64?)]

        var strings: [String] { [String(leaseScore)] + entries.flatMap { [$0.userId, $0.dueAt.map { String($0) } ?? ""] } }
    }

    /// How many leases were removed.
    typealias Reply = IntegerReply
}
