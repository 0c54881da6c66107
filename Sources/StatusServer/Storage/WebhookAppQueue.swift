import RedisClient

/// One app's queue of undelivered webhook events, in the app's hash slot (so it goes when the app is deleted):
/// the stream ``RedisKeys/webhookStream`` holds the events oldest first, ``RedisKeys/webhookDue`` says when each is
/// next due (leased while a node delivers it) and ``RedisKeys/webhookAttempts`` how many attempts failed. Every step is
/// one script on the three keys, so they always agree.
struct WebhookAppQueue: Sendable {
    let redis: RedisClient
    let scripts: ScriptLibrary

    private var runner: ScriptRunner { ScriptRunner(redis: redis, scripts: scripts) }

    private func keys(_ appId: String) -> WebhookQueueKeys {
        WebhookQueueKeys(app: RedisKeys(appId: appId))
    }

    /// What an enqueue did.
    typealias Enqueued = WebhookEnqueue.Reply

    /// Appends an event, due now; drops the oldest events past `bound`.
    func enqueue(appId: String, body: String, generation: String, bound: Int) async throws -> Enqueued {
        try await runner.run(WebhookEnqueue.self, keys: keys(appId), arguments: .init(body: body, generation: generation, bound: bound))
    }

    /// Leases up to `limit` due events of the app for `lease`.
    func take(_ appId: String, limit: Int, lease: Duration) async throws -> WebhookTake {
        let reply = try await runner.run(
            WebhookTakeScript.self,
            keys: keys(appId),
            arguments: .init(leaseMs: lease.inMilliseconds, limit: limit)
        )
        return WebhookTake(reply, appId: appId)
    }

    /// Removes an event that needs no further attempt.
    func settle(_ job: WebhookJob) async throws {
        _ = try await runner.run(WebhookSettle.self, keys: keys(job.appId), arguments: .init(eventId: job.eventId))
    }

    /// Makes the event due again after `delay`, with `attempts` made; nothing happens when it left the queue meanwhile.
    func retry(_ job: WebhookJob, attempts: Int, after delay: Duration) async throws {
        _ = try await runner.run(
            WebhookRetry.self,
            keys: .init(app: RedisKeys(appId: job.appId)),
            arguments: .init(eventId: job.eventId, backoffMs: max(0, delay.inMilliseconds), attempts: attempts)
        )
    }

    /// Undelivered events of the app.
    func count(_ appId: String) async throws -> Int {
        Int(try await redis.send("ZCARD", RedisKeys(appId: appId).webhookDue).int ?? 0)
    }

    /// Undelivered events of each app, in their order, read in one pipeline.
    func counts(_ appIds: [String]) async throws -> [Int] {
        try await redis.pipeline(appIds.map { ["ZCARD", RedisKeys(appId: $0).webhookDue] }).map { Int($0.int ?? 0) }
    }
}
