import RedisClient

/// The twin of `Scripts/custom_status_expire.lua` (SPEC §10.2): clears a custom status that still expires at the due
/// time of its index entry, as a notified change.
enum CustomStatusExpire: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.customStatusExpire }

    typealias Keys = UserStatusKeys

    /// ARGV: the due `ce` (epoch ms, as the index entry holds it), appId, userId, the two status channels.
    struct Arguments: ScriptInput {
        var dueAt: String
        var appId: String
        var userId: String

        var strings: [String] { [dueAt, appId, userId] + BusChannels.statusArguments(appId, userId) }
    }

    /// `{0}` when there was nothing to clear, else `{1, public view changed (0|1), <status reply>}`.
    enum Reply: ScriptReply {
        case nothingToClear
        case cleared(publicChange: Bool, status: StatusReply)

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "custom_status_expire.lua")
            if try reader.flag() {
                self = .cleared(publicChange: try reader.flag(), status: try reader.statusReply())
            } else {
                try reader.end()
                self = .nothingToClear
            }
        }
    }
}
