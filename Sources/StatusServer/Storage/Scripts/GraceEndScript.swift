import RedisClient

/// The twin of `Scripts/grace_end.lua` (SPEC §10.3, §10.5): ends an offline grace that ran out, or the grace of an
/// invisible user still seen online, and publishes the change.
enum GraceEndScript: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.graceEnd }

    typealias Keys = UserPresenceKeys

    /// ARGV: retention ms, appId, userId, the two status channels.
    struct Arguments: ScriptInput {
        var retentionMs: Int64
        var appId: String
        var userId: String

        var strings: [String] { [String(retentionMs), appId, userId] + BusChannels.statusArguments(appId, userId) }
    }

    /// `{0}` no grace to end, `{2, end}` one ends later, `{1, custom status cleared (0|1), public view changed (0|1),
    /// the end of a grace still running ('' = none), <status reply>}` ended.
    enum Reply: ScriptReply {
        case none
        /// The grace runs until then (epoch ms, Redis clock).
        case later(Int64)
        /// `still`: the end of the other grace, still running (epoch ms, Redis clock).
        case ended(clearedCustomStatus: Bool, publicChange: Bool, still: Int64?, status: StatusReply)

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "grace_end.lua")
            switch try reader.integer() {
            case 0:
                try reader.end()
                self = .none
            case 2:
                self = .later(try reader.integer())
                try reader.end()
            case 1:
                let cleared = try reader.flag()
                let publicChange = try reader.flag()
                let still = try reader.optionalString()
                guard let still else {
                    self = .ended(clearedCustomStatus: cleared, publicChange: publicChange, still: nil, status: try reader.statusReply())
                    return
                }
                guard let until = Int64(still) else { throw StatusReplyError(script: reader.script, problem: "unknown end \(still)") }
                self = .ended(clearedCustomStatus: cleared, publicChange: publicChange, still: until, status: try reader.statusReply())
            case let other:
                throw StatusReplyError(script: reader.script, problem: "unknown outcome \(other)")
            }
        }
    }
}
