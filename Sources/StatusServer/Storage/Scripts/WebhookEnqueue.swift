import RedisClient

/// The twin of `Scripts/webhook_enqueue.lua` (SPEC §8 a queue that survives a restart, §10.7 bounded per app): appends
/// an event to the app's queue and drops the oldest past the bound.
enum WebhookEnqueue: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.webhookEnqueue }

    typealias Keys = WebhookQueueKeys

    /// ARGV: event body (JSON), the app's generation, the most undelivered events the app may have.
    struct Arguments: ScriptInput {
        var body: String
        var generation: String
        var bound: Int

        var strings: [String] { [body, generation, String(bound)] }
    }

    /// `{events dropped to keep the bound, 1 when the queue was empty before (the app must join the index) else 0}`.
    struct Reply: ScriptReply, Equatable {
        /// Oldest events dropped to keep the app's bound.
        var dropped: Int
        /// The queue was empty before: the app must join the index of apps with queued events.
        var first: Bool

        init(dropped: Int, first: Bool) {
            self.dropped = dropped
            self.first = first
        }

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "webhook_enqueue.lua")
            dropped = Int(try reader.integer())
            first = try reader.flag()
            try reader.end()
        }
    }
}

/// KEYS of the scripts on one app's webhook queue: its stream, its due set, its attempt counts.
struct WebhookQueueKeys: ScriptInput {
    var app: RedisKeys
    var strings: [String] { [app.webhookStream, app.webhookDue, app.webhookAttempts] }
}
