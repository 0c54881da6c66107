import RedisClient
import StatusCore

/// The twin of `Scripts/connect_admission.lua` (SPEC §10.6 `connectRateLimit`, §10.7 refusal cost): whether a connect
/// would be admitted now, checked before a WebSocket connect stores anything; with it, when the node does not know
/// them yet, the user's relationships (SPEC §6), so that the admission and that read are one round trip.
enum ConnectAdmission: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.connectAdmission }

    /// KEYS: connect rate-limit log, subscriptions, friends, blocks, blocked-by.
    struct Keys: ScriptInput {
        var user: UserKeys
        var strings: [String] { [user.connectRateLimit, user.subscriptions, user.friends, user.blocks, user.blockedBy] }
    }

    /// ARGV: calls, window ms, whether to read the relationships.
    struct Arguments: ScriptInput {
        var limit: AppConfig.RateLimit
        var readingRelations: Bool

        var strings: [String] {
            [String(limit.calls), String(Int64(limit.windowSeconds) * 1000), readingRelations ? "1" : "0"]
        }
    }

    /// The relationships read (nil when they were not asked for); a refusal is the error reply
    /// `CONNECT_RATE_LIMITED <ms>` (``ScriptErrorReply``).
    struct Reply: ScriptReply, Equatable {
        var relations: Relations?

        init(relations: Relations?) {
            self.relations = relations
        }

        init(_ value: RedisValue) throws {
            if case .integer = value {
                relations = nil
                return
            }
            var reader = try ScriptReplyReader(value, script: "connect_admission.lua")
            relations = Relations(
                subscriptions: try reader.members(),
                friends: try reader.members(),
                blocked: try reader.members()
            )
        }
    }
}
