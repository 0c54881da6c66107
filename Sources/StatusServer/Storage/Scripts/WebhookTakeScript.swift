import RedisClient

/// The twin of `Scripts/webhook_take.lua` (SPEC §8 at-least-once delivery): leases the app's events that are due.
enum WebhookTakeScript: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.webhookTake }

    typealias Keys = WebhookQueueKeys

    /// ARGV: lease ms, most events to take.
    struct Arguments: ScriptInput {
        var leaseMs: Int64
        var limit: Int

        var strings: [String] { [String(leaseMs), String(limit)] }
    }

    /// `{events left in the queue, ms until the next one is due (-1: none left), then id, body, generation, attempts
    /// made for each event taken}`.
    struct Reply: ScriptReply {
        var left: Int
        /// Nil when none is left.
        var nextDueMs: Int64?
        var events: [Event]

        /// A leased event.
        struct Event: Equatable {
            var id: String
            var body: String
            var generation: String
            var attempts: Int
        }

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "webhook_take.lua")
            left = Int(try reader.integer())
            let wait = try reader.integer()
            nextDueMs = wait >= 0 ? wait : nil
            guard reader.remaining.count % 4 == 0 else {
                throw StatusReplyError(script: reader.script, problem: "\(reader.remaining.count) event values, not 4 per event")
            }
            events = []
            events.reserveCapacity(reader.remaining.count / 4)
            while !reader.isAtEnd {
                events.append(
                    Event(id: try reader.string(), body: try reader.string(), generation: try reader.string(), attempts: Int(try reader.integer()))
                )
            }
        }
    }
}
