import RedisClient

/// The twin of `Scripts/subscribe_target.lua` (SPEC §4 subscribeUserStatus, §7 user deletion): records the subscriber
/// in the target's reverse index when the target exists.
enum SubscribeTarget: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.subscribeTarget }

    /// KEYS: the target's profile, the target's reverse index of subscribers.
    struct Keys: ScriptInput {
        var target: UserKeys
        var strings: [String] { [target.profile, target.subscribers] }
    }

    /// ARGV: the subscriber's userId.
    struct Arguments: ScriptInput {
        var subscriber: String
        var strings: [String] { [subscriber] }
    }

    /// `1` when the target exists (and the subscriber is recorded), `0` when it does not.
    typealias Reply = FlagReply
}
