import RedisClient

/// One delivery to make: an event of one app's queue, leased to this node by ``WebhookAppQueue/take(_:limit:lease:)``.
struct WebhookJob: Sendable, Hashable {
    /// The app whose webhook receives the event.
    var appId: String
    /// The event's stream id in the app's queue (it names the event in logs and settles it).
    var eventId: String
    /// The JSON event, POSTed and signed byte for byte.
    var body: String
    /// The generation of the app the event was queued for (``AppRecord/generation``); empty when unknown.
    var generation: String
    /// Attempts already made (0 for a fresh event).
    var attempt: Int
}

/// What one take from an app's queue found.
struct WebhookTake: Sendable, Hashable {
    /// The events leased to this node.
    var jobs: [WebhookJob]
    /// Events left in the app's queue (taken ones included); 0 means the queue is empty.
    var left: Int
    /// When the next event is due, counted from the take; nil when the queue is empty.
    var nextDue: Duration?

    /// Parses the reply of `webhook_take.lua`: `{left, ms until the next is due, id, body, generation, attempts, ...}`.
    static func parse(_ reply: RedisValue, appId: String) -> WebhookTake {
        let values = reply.array ?? []
        let left = values.first?.int ?? 0
        let wait = values.count > 1 ? values[1].int ?? -1 : -1
        var jobs: [WebhookJob] = []
        var index = 2
        while index + 3 < values.count {
            if let id = values[index].string, let body = values[index + 1].string {
                let generation = values[index + 2].string ?? ""
                let attempt = values[index + 3].int.map { Int($0) } ?? 0
                jobs.append(WebhookJob(appId: appId, eventId: id, body: body, generation: generation, attempt: attempt))
            }
            index += 4
        }
        return WebhookTake(jobs: jobs, left: Int(left), nextDue: left > 0 && wait >= 0 ? .milliseconds(wait) : nil)
    }
}
