import AsyncHTTPClient
import Foundation
import Logging
import RedisClient
import ServiceLifecycle
import StatusCore
import Synchronization

/// Delivers the SPEC §8 callbacks that ``WebhookQueue`` appends to the stream `st:webhooks`, at least once.
///
/// Every node is a consumer (named by its node id) of the group `statusd`, so each event goes to one node. That node
/// POSTs it, signed, to the app's current webhook URL (an app without a webhook, or deleted, has its events dropped);
/// a 2xx answer within 2 s acknowledges and deletes the entry. A failure moves the event to the sorted set
/// ``WebhookRetries/key`` with its next due time (exponential backoff) and then acknowledges the stream entry, so a
/// retry is in Redis before the entry leaves; after ``WebhookDispatchSettings/maxAttempts`` the event is dropped. Entries
/// left pending by a node that died are taken over with `XAUTOCLAIM`; retries leased by it come back when the lease ends.
///
/// Redis is polled (no `BLOCK`), so the dispatcher never holds a shared pipelined connection; it reads only as many
/// entries as it has free delivery slots, and waits for the deliveries in flight when the node shuts down.
struct WebhookDispatcher: Service {
    let redis: RedisClient
    let apps: AppRegistry
    let nodeId: String
    let settings: WebhookDispatchSettings
    let logger: Logger

    /// A dispatcher for the node of `services`.
    init(services: ServerServices, settings: WebhookDispatchSettings = WebhookDispatchSettings()) {
        self.redis = services.redis
        self.apps = services.apps
        self.nodeId = services.configuration.nodeId
        self.settings = settings
        self.logger = services.logger
    }

    private var retries: WebhookRetries { WebhookRetries(redis: redis) }

    func run() async throws {
        let client = WebhookSender.makeClient(timeout: settings.timeout)
        let sender = WebhookSender(client: client, timeout: settings.timeout)
        let inFlight = InFlightCounter()
        await withDiscardingTaskGroup { group in
            var state = ReadState()
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                let free = settings.maxInFlight - inFlight.value
                guard free > 0 else {
                    try? await Task.sleep(for: .milliseconds(20))
                    continue
                }
                let jobs = await nextJobs(limit: free, state: &state)
                guard !jobs.isEmpty else {
                    try? await Task.sleep(for: settings.idlePoll)
                    continue
                }
                for job in jobs {
                    inFlight.add(1)
                    group.addTask {
                        await deliver(job, with: sender)
                        inFlight.add(-1)
                    }
                }
            }
        }
        do {
            try await client.shutdown()
        } catch {
            logger.debug("webhook HTTP client shutdown failed", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Reading

    /// What the read loop remembers between rounds.
    private struct ReadState {
        var groupReady = false
        var claimCursor = "0-0"
        var nextClaim = ContinuousClock.now
        var failing = false
    }

    /// Up to `limit` jobs: due retries first, then entries of dead consumers (every ``WebhookDispatchSettings/claimEvery``),
    /// then new entries. A Redis failure is logged once and ends the round with what was taken so far.
    private func nextJobs(limit: Int, state: inout ReadState) async -> [WebhookJob] {
        var jobs: [WebhookJob] = []
        do {
            if !state.groupReady {
                try await createGroup()
                state.groupReady = true
            }
            jobs += try await retries.takeDue(limit: limit, lease: settings.retryLease)
            if jobs.count < limit && ContinuousClock.now >= state.nextClaim {
                let (claimed, cursor) = try await claimAbandoned(after: state.claimCursor, count: limit - jobs.count)
                jobs += claimed
                state.claimCursor = cursor
                if cursor == "0-0" { state.nextClaim = ContinuousClock.now + settings.claimEvery }
            }
            if jobs.count < limit { jobs += try await readNew(count: limit - jobs.count) }
            if state.failing {
                logger.info("webhook dispatch resumed")
                state.failing = false
            }
        } catch let error as RedisClientError where error.kind == .server && error.message.hasPrefix("NOGROUP") {
            // The stream or the group went away (e.g. FLUSHALL): create them again next round.
            state.groupReady = false
        } catch {
            if !state.failing {
                logger.warning("webhook dispatch cannot read its queue", metadata: ["error": "\(error)"])
                state.failing = true
            }
        }
        return jobs
    }

    /// Creates the stream and the group if missing. The group starts at the beginning of the stream: delivered entries
    /// are deleted, so whatever the stream holds (queued before any node delivered) is still to deliver.
    private func createGroup() async throws {
        do {
            _ = try await redis.send("XGROUP", "CREATE", WebhookQueue.stream, WebhookQueue.group, "0", "MKSTREAM")
        } catch let error as RedisClientError where error.kind == .server && error.message.hasPrefix("BUSYGROUP") {
            return
        }
    }

    /// New entries for this node: `XREADGROUP ... STREAMS st:webhooks >`.
    private func readNew(count: Int) async throws -> [WebhookJob] {
        let reply = try await redis.send(
            "XREADGROUP",
            "GROUP",
            WebhookQueue.group,
            nodeId,
            "COUNT",
            String(count),
            "STREAMS",
            WebhookQueue.stream,
            ">"
        )
        var entries: [RedisValue] = []
        for stream in reply.array ?? [] {
            if let parts = stream.array, parts.count == 2 { entries += parts[1].array ?? [] }
        }
        return try await usable(WebhookJob.parse(entries: entries))
    }

    /// Entries pending for longer than ``WebhookDispatchSettings/claimIdle`` with any consumer (a dead node, or this
    /// node before a restart), taken over by this node; returns them and the cursor to go on from ("0-0": done).
    private func claimAbandoned(after cursor: String, count: Int) async throws -> ([WebhookJob], String) {
        let reply = try await redis.send(
            "XAUTOCLAIM",
            WebhookQueue.stream,
            WebhookQueue.group,
            nodeId,
            String(settings.claimIdle.inMilliseconds),
            cursor,
            "COUNT",
            String(count)
        )
        guard let parts = reply.array, parts.count >= 2 else { return ([], "0-0") }
        let jobs = try await usable(WebhookJob.parse(entries: parts[1].array ?? []))
        if !jobs.isEmpty { logger.info("took over pending webhook events", metadata: ["count": "\(jobs.count)"]) }
        return (jobs, parts[0].string ?? "0-0")
    }

    /// The batch's jobs, once its deleted or malformed entries are acknowledged.
    private func usable(_ batch: WebhookJob.StreamBatch) async throws -> [WebhookJob] {
        if !batch.unusable.isEmpty { try await acknowledge(batch.unusable) }
        return batch.jobs
    }

    // MARK: Delivering

    /// One attempt at `job`, then its settlement: delivered, rescheduled, or dropped.
    private func deliver(_ job: WebhookJob, with sender: WebhookSender) async {
        var metadata: Logger.Metadata = ["appId": "\(job.appId)", "event": "\(job.eventId)", "attempt": "\(job.attempt + 1)"]
        let webhook: AppConfig.Webhook?
        do {
            webhook = try await apps.find(job.appId)?.config.webhook
        } catch {
            // Left as it is: a stream entry is taken over once idle, a retry comes back when its lease ends.
            logger.debug("webhook app lookup failed", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            return
        }
        guard let webhook else {
            logger.debug("webhook event skipped: the app has no webhook", metadata: metadata)
            await settle(job)
            return
        }
        switch await sender.post(job.body, to: webhook) {
        case .delivered:
            Metrics.webhookDeliveries("success").increment()
            await settle(job)
        case .failed(let reason):
            metadata["reason"] = "\(reason)"
            let attempts = job.attempt + 1
            guard attempts < settings.maxAttempts else {
                Metrics.webhookDeliveries("dropped").increment()
                logger.warning("webhook event dropped after its last attempt", metadata: metadata)
                await settle(job)
                return
            }
            Metrics.webhookDeliveries("retry").increment()
            let delay = settings.backoff(afterAttempt: job.attempt)
            logger.debug("webhook delivery failed, retrying", metadata: metadata.merging(["delay": "\(delay)"]) { $1 })
            do {
                try await retries.schedule(job, attempt: attempts, after: delay)
                if case .stream(let id) = job.source { try await acknowledge([id]) }
            } catch {
                logger.warning("could not schedule a webhook retry", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            }
        }
    }

    /// Removes a job that needs no further attempt.
    private func settle(_ job: WebhookJob) async {
        do {
            switch job.source {
            case .stream(let id): try await acknowledge([id])
            case .retry(let member): try await retries.remove(member: member)
            }
        } catch {
            logger.warning("could not remove a settled webhook event", metadata: ["event": "\(job.eventId)", "error": "\(error)"])
        }
    }

    /// `XACK` and `XDEL` stream entries.
    private func acknowledge(_ ids: [String]) async throws {
        let replies = try await redis.pipeline([
            ["XACK", WebhookQueue.stream, WebhookQueue.group] + ids,
            ["XDEL", WebhookQueue.stream] + ids,
        ])
        for case .error(let message) in replies {
            throw RedisClientError(kind: .server, message: message)
        }
    }
}

/// How many deliveries a dispatcher has in flight.
private final class InFlightCounter: Sendable {
    private let count = Mutex(0)

    /// The current count.
    var value: Int { count.withLock { $0 } }

    /// Adds `delta` to the count.
    func add(_ delta: Int) {
        count.withLock { $0 += delta }
    }
}
