import RedisClient

/// The twin of `Scripts/due_done.lua` (SPEC §10.2 and §10.3): removes the handled entries of a due-time index unless
/// they were written again since they were taken.
enum DueDone: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.dueDone }

    typealias Keys = DueIndexKeys

    /// ARGV: the lease's score, then userIds.
    struct Arguments: ScriptInput {
        var leaseScore: Int64
        var userIds: [String]

        var strings: [String] { [String(leaseScore)] + userIds }
    }

    /// How many were removed.
    typealias Reply = IntegerReply
}
