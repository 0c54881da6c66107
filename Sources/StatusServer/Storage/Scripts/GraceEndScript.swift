import RedisClient

/// The twin of `Scripts/grace_end.lua` (SPEC §10.3): ends an offline grace that ran out, and publishes the change.
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

    /// `{0}` no grace to end, `{2, gu}` it ends later, `{1, custom status cleared (0|1), public view changed (0|1),
    /// <status reply>}` ended.
    enum Reply: ScriptReply {
        case none
        /// The grace runs until then (epoch ms, Redis clock).
        case later(Int64)
        case ended(clearedCustomStatus: Bool, publicChange: Bool, status: StatusReply)

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
                self = .ended(clearedCustomStatus: try reader.flag(), publicChange: try reader.flag(), status: try reader.statusReply())
            case let other:
                throw StatusReplyError(script: reader.script, problem: "unknown outcome \(other)")
            }
        }
    }
}
