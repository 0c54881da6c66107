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

    /// The jobs of the app's events that `webhook_take.lua` leased (its twin ``WebhookTakeScript``).
    init(_ reply: WebhookTakeScript.Reply, appId: String) {
        jobs = reply.events.map {
            WebhookJob(appId: appId, eventId: $0.id, body: $0.body, generation: $0.generation, attempt: $0.attempts)
        }
        left = reply.left
        nextDue = reply.left > 0 ? reply.nextDueMs.map { .milliseconds($0) } : nil
    }
}
