import RedisClient

/// The twin of `Scripts/unsubscribe.lua` (SPEC §4 unsubscribeUserStatus, §5 rate limit): removes the listed targets
/// (all for an empty list) after the rate-limit check.
enum Unsubscribe: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.unsubscribe }

    /// KEYS: subs, rate-limit log, status.
    struct Keys: ScriptInput {
        var user: UserKeys
        var strings: [String] { [user.subscriptions, user.rateLimit(.unsubscribe), user.status] }
    }

    /// ARGV: calls, window ms, retention ms, targets.
    struct Arguments: ScriptInput {
        var rateLimit: RateLimitArguments
        var retentionMs: Int64
        var targets: [String]

        var strings: [String] { rateLimit.strings + [String(retentionMs)] + targets }
    }

    /// `{0, removed...}` when accepted; `{1, retry ms}` when limited is thrown as `RATE_LIMITED`.
    struct Reply: ScriptReply {
        var removed: [String]

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "unsubscribe.lua")
            try reader.admitted()
            removed = []
            removed.reserveCapacity(reader.values.count)
            while !reader.isAtEnd { removed.append(try reader.string()) }
        }
    }
}
