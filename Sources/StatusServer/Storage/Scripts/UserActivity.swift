import RedisClient

/// The twin of `Scripts/user_activity.lua` (SPEC §2 lastActiveAt): a request of an online user is activity.
enum UserActivity: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.userActivity }

    /// KEYS: status.
    struct Keys: ScriptInput {
        var user: UserKeys
        var strings: [String] { [user.status] }
    }

    /// ARGV: none.
    struct Arguments: ScriptInput {
        var strings: [String] { [] }
    }

    /// `0`.
    typealias Reply = IgnoredReply
}
