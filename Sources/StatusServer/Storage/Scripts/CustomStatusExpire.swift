import RedisClient

/// The twin of `Scripts/custom_status_expire.lua` (SPEC §10.2): clears a custom status whose stored expiry came, as a
/// notified change, whatever its index entry's time.
enum CustomStatusExpire: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.customStatusExpire }

    typealias Keys = UserStatusKeys

    /// ARGV: appId, userId, the two status channels.
    struct Arguments: ScriptInput {
        var appId: String
        var userId: String

        var strings: [String] { [appId, userId] + BusChannels.statusArguments(appId, userId) }
    }

    /// `{0}` when there was nothing to clear, `{2, ce}` when the moment has not come on the Redis clock, else
    /// `{1, public view changed (0|1), <status reply>}`.
    enum Reply: ScriptReply {
        case nothingToClear
        /// The custom status expires then (epoch ms), later than Redis's time: the entry was taken early (a node's clock
        /// runs ahead, or the entry's time was another write's).
        case later(Int64)
        case cleared(publicChange: Bool, status: StatusReply)

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "custom_status_expire.lua")
            switch try reader.integer() {
            case 0:
                try reader.end()
                self = .nothingToClear
            case 2:
                self = .later(try reader.integer())
                try reader.end()
            case 1:
                self = .cleared(publicChange: try reader.flag(), status: try reader.statusReply())
            case let other:
                throw StatusReplyError(script: reader.script, problem: "unknown outcome \(other)")
            }
        }
    }
}
