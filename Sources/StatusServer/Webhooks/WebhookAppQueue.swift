import RedisClient

/// One app's queue of undelivered webhook events, in the app's hash slot (so it goes when the app is deleted):
/// the stream ``RedisKeys/webhookStream`` holds the events oldest first, ``RedisKeys/webhookDue`` says when each is
/// next due (leased while a node delivers it) and ``RedisKeys/webhookAttempts`` how many attempts failed. Every step is
/// one script on the three keys, so they always agree.
struct WebhookAppQueue: Sendable {
    let redis: RedisClient
    let scripts: ScriptLibrary

    private func keys(_ appId: String) -> [String] {
        let keys = RedisKeys(appId: appId)
        return [keys.webhookStream, keys.webhookDue, keys.webhookAttempts]
    }

    /// What an enqueue did.
    struct Enqueued: Sendable, Hashable {
        /// Oldest events dropped to keep the app's bound.
        var dropped: Int
        /// The queue was empty before: the app must join the index of apps with queued events.
        var first: Bool
    }

    /// Appends an event, due now; drops the oldest events past `bound`.
    func enqueue(appId: String, body: String, generation: String, bound: Int) async throws -> Enqueued {
        let reply = try await redis.evalScript(scripts.webhookEnqueue, keys: keys(appId), arguments: [body, generation, String(bound)])
        let values = reply.array ?? []
        return Enqueued(dropped: Int(values.first?.int ?? 0), first: values.count > 1 && values[1].int == 1)
    }

    /// Leases up to `limit` due events of the app for `lease`.
    func take(_ appId: String, limit: Int, lease: Duration) async throws -> WebhookTake {
        let reply = try await redis.evalScript(scripts.webhookTake, keys: keys(appId), arguments: [String(lease.inMilliseconds), String(limit)])
        return WebhookTake.parse(reply, appId: appId)
    }

    /// Removes an event that needs no further attempt.
    func settle(_ job: WebhookJob) async throws {
        _ = try await redis.evalScript(scripts.webhookSettle, keys: keys(job.appId), arguments: [job.eventId])
    }

    /// Makes the event due again after `delay`, with `attempts` made; nothing happens when it left the queue meanwhile.
    func retry(_ job: WebhookJob, attempts: Int, after delay: Duration) async throws {
        let keys = RedisKeys(appId: job.appId)
        _ = try await redis.evalScript(
            scripts.webhookRetry,
            keys: [keys.webhookDue, keys.webhookAttempts],
            arguments: [job.eventId, String(max(0, delay.inMilliseconds)), String(attempts)]
        )
    }

    /// Undelivered events of the app.
    func count(_ appId: String) async throws -> Int {
        Int(try await redis.send("ZCARD", RedisKeys(appId: appId).webhookDue).int ?? 0)
    }
}
