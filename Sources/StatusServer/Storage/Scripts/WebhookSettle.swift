import RedisClient

/// The twin of `Scripts/webhook_settle.lua` (SPEC §8): an event that needs no further attempt leaves the app's queue.
enum WebhookSettle: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.webhookSettle }

    typealias Keys = WebhookQueueKeys

    /// ARGV: event id.
    struct Arguments: ScriptInput {
        var eventId: String
        var strings: [String] { [eventId] }
    }

    /// `1`.
    typealias Reply = IgnoredReply
}
