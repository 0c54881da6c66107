import RedisClient

/// The twin of `Scripts/webhook_index_add.lua` (SPEC §10.7): an app with queued webhook events joins the index the
/// dispatchers go round, with a new sequence number as its score.
enum WebhookIndexAdd: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.webhookIndexAdd }

    /// KEYS: the index, its sequence counter.
    struct Keys: ScriptInput {
        var strings: [String] { [RedisKeys.webhookApps, RedisKeys.webhookAppsSequence] }
    }

    /// ARGV: appId.
    struct Arguments: ScriptInput {
        var appId: String
        var strings: [String] { [appId] }
    }

    /// The app's new score.
    typealias Reply = IntegerReply
}
