import RedisClient

/// The twin of `Scripts/due_take.lua` (SPEC §10.2 and §10.3): leases the entries of a due-time index that fell due to
/// the calling node (they move to the index's leases), after bringing back the leases that ran out.
enum DueTake: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.dueTake }

    typealias Keys = DueIndexKeys

    /// ARGV: now (epoch ms), lease ms, most entries to take.
    struct Arguments: ScriptInput {
        var nowMs: Int64
        var leaseMs: Int64
        var limit: Int

        var strings: [String] { [String(nowMs), String(leaseMs), String(limit)] }
    }

    /// `{the leases' score, userId, due ms, ...}`: the taken entries, earliest first.
    struct Reply: ScriptReply {
        /// When the leases end, epoch ms on Redis's clock: the score ``DueDone`` finds them at.
        var leaseScore: Int64
        /// Each entry's userId and its due time as written (epoch ms).
        var entries: [(userId: String, dueAt: String)]

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "due_take.lua")
            guard reader.values.count % 2 == 1 else {
                throw StatusReplyError(script: reader.script, problem: "\(reader.values.count) values, not a score and pairs")
            }
            leaseScore = try reader.integer()
            entries = []
            entries.reserveCapacity(reader.values.count / 2)
            while !reader.isAtEnd { entries.append((try reader.string(), try reader.string())) }
        }
    }
}

/// KEYS of the due-time index scripts: the index and its leases (the entries being handled), in the app's slot.
struct DueIndexKeys: ScriptInput {
    var index: String
    var leases: String
    var strings: [String] { [index, leases] }
}
