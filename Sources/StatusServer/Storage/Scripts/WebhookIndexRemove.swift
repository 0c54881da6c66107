import RedisClient

/// The twin of `Scripts/webhook_index_remove.lua` (SPEC §10.7): an app found with an empty queue leaves the index,
/// unless it was added again since its score was read.
enum WebhookIndexRemove: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.webhookIndexRemove }

    /// KEYS: the index.
    struct Keys: ScriptInput {
        var strings: [String] { [RedisKeys.webhookApps] }
    }

    /// ARGV: appId, the score the dispatcher read.
    struct Arguments: ScriptInput {
        var appId: String
        var seenScore: String
        var strings: [String] { [appId, seenScore] }
    }

    /// `1` removed, `0` kept.
    typealias Reply = FlagReply
}
