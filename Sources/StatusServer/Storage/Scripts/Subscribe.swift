import RedisClient

/// The twin of `Scripts/subscribe.lua` (SPEC §4 subscribeUserStatus): adds the subscriptions of an accepted call and
/// evicts the earliest past the limit.
enum Subscribe: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.subscribe }

    /// KEYS: subs, status.
    struct Keys: ScriptInput {
        var user: UserKeys
        var strings: [String] { [user.subscriptions, user.status] }
    }

    /// ARGV: subscription limit, retention ms, targets.
    struct Arguments: ScriptInput {
        var limit: Int
        var retentionMs: Int64
        var targets: [String]

        var strings: [String] { [String(limit), String(retentionMs)] + targets }
    }

    /// `{evicted...}`.
    struct Reply: ScriptReply {
        var evicted: [String]

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "subscribe.lua")
            evicted = []
            evicted.reserveCapacity(reader.values.count)
            while !reader.isAtEnd { evicted.append(try reader.string()) }
        }
    }
}
