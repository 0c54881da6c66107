import RedisClient

/// The twin of `Scripts/webhook_retry.lua` (SPEC §8 retried with backoff): a failed event is due again after the
/// backoff, unless it left the queue meanwhile.
enum WebhookRetry: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.webhookRetry }

    /// KEYS: the app's due set, its attempt counts.
    struct Keys: ScriptInput {
        var app: RedisKeys
        var strings: [String] { [app.webhookDue, app.webhookAttempts] }
    }

    /// ARGV: event id, backoff ms, attempts made.
    struct Arguments: ScriptInput {
        var eventId: String
        var backoffMs: Int64
        var attempts: Int

        var strings: [String] { [eventId, String(backoffMs), String(attempts)] }
    }

    /// `1` rescheduled, `0` the event is gone.
    typealias Reply = FlagReply
}
