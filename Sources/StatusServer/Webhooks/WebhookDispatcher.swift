import AsyncHTTPClient
import Foundation
import Logging
import ServiceLifecycle
import StatusCore
import Synchronization

/// Delivers the SPEC §8 callbacks that ``WebhookQueue`` puts in each app's own queue, at least once, without letting
/// one app's receiver delay another's (SPEC §10.7).
///
/// Every node goes round the apps of ``WebhookAppIndex`` and leases due events from their queues
/// (``WebhookAppQueue/take(_:limit:lease:)``), in turns decided by ``WebhookFairShare``: at most
/// ``WebhookDispatchSettings/maxInFlightPerApp`` deliveries of one app at a time, so an app whose receiver hangs holds
/// a few slots for the 2 s timeout and the other apps' events go out at once. Each event is POSTed, signed, to the
/// app's current webhook URL; a 2xx answer within 2 s settles it. A failure makes it due again after the backoff, until
/// ``WebhookDispatchSettings/maxAttempts``; an app deleted (or deleted and created again) or without a webhook has its
/// event dropped. A node that dies mid-delivery leaves its leased events to come back when the lease ends.
///
/// Redis is polled (no blocking reads), so the dispatcher never holds a shared pipelined connection: every
/// ``WebhookDispatchSettings/idlePoll``, or at once when an event is queued on this node or a delivery finishes
/// (``WebhookWakeup``). It waits for the deliveries in flight when the node shuts down.
struct WebhookDispatcher: Service {
    let apps: AppRegistry
    let queue: WebhookAppQueue
    let index: WebhookAppIndex
    let wakeup: WebhookWakeup
    let legacy: WebhookLegacyQueue
    let settings: WebhookDispatchSettings
    /// The node's time: the pacing of reindexing and of apps' rests, and the signing time of deliveries.
    let clock: any NodeClock
    /// Counts deliveries by outcome.
    let metrics: NodeMetrics
    let logger: Logger

    /// A dispatcher delivering from `webhooks`' queues, the apps' configs read from `apps`; `legacy` is the queue of an
    /// earlier version, emptied into them first.
    init(
        apps: AppRegistry,
        webhooks: WebhookQueue,
        legacy: LegacyWebhookStore,
        settings: WebhookDispatchSettings = WebhookDispatchSettings(),
        clock: any NodeClock,
        metrics: NodeMetrics,
        logger: Logger
    ) {
        self.apps = apps
        self.queue = webhooks.queue
        self.index = webhooks.index
        self.wakeup = webhooks.wakeup
        self.legacy = WebhookLegacyQueue(store: legacy, queue: webhooks, metrics: metrics, logger: logger)
        self.settings = settings
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    func run() async throws {
        let client = WebhookSender.makeClient(timeout: settings.timeout, connectionsPerHost: settings.maxInFlight)
        let sender = WebhookSender(client: client, timeout: settings.timeout)
        let share = SharedFairShare(WebhookFairShare(total: settings.maxInFlight, perApp: settings.maxInFlightPerApp))
        await withDiscardingTaskGroup { group in
            var failing = false
            var nextReindex = clock.now
            var view = IndexView()
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                var started = 0
                do {
                    if clock.now >= nextReindex {
                        try await legacy.drain()
                        try await reindex()
                        nextReindex = clock.now + settings.reindexEvery
                    }
                    if wakeup.takeEnqueued() { view.read = nil }
                    let jobs = try await nextJobs(share, view: &view)
                    started = jobs.count
                    for job in jobs {
                        group.addTask {
                            await deliver(job, with: sender)
                            share.withLock { $0.finished(job.appId) }
                            wakeup.signal()
                        }
                    }
                    if failing {
                        logger.info("webhook dispatch resumed")
                        failing = false
                    }
                } catch {
                    if !failing {
                        logger.warning("webhook dispatch cannot read its queues", metadata: ["error": "\(error)"])
                        failing = true
                    }
                }
                if started == 0 { await wakeup.wait(upTo: settings.idlePoll, on: clock) }
            }
        }
        do {
            try await client.shutdown()
        } catch {
            logger.debug("webhook HTTP client shutdown failed", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Reading

    /// The index as last read: the apps (in appId order) and their scores.
    private struct IndexView {
        var apps: [String] = []
        var scores: [String: String] = [:]
        var read: ContinuousClock.Instant?
    }

    /// One round: the indexed apps, and from each app whose turn it is as many due events as it may take. An app found
    /// with an empty queue leaves the index; one with nothing due now rests. The index is read again once it is older
    /// than ``WebhookDispatchSettings/indexFreshness``, so rounds started by finished deliveries under load reuse it.
    private func nextJobs(_ share: SharedFairShare, view: inout IndexView) async throws -> [WebhookJob] {
        guard share.withLock({ $0.free }) > 0 else { return [] }
        let now = clock.now
        if view.read.map({ now - $0 >= settings.indexFreshness }) ?? true {
            let indexed = try await index.apps()
            view.scores = Dictionary(indexed.map { ($0.appId, $0.score) }, uniquingKeysWith: { $1 })
            view.apps = view.scores.keys.sorted()
            view.read = now
            share.withLock { $0.prune(keeping: Set(view.apps)) }
        }
        let plan = share.withLock { $0.plan(apps: view.apps, now: now) }
        var jobs: [WebhookJob] = []
        for (appId, count) in plan {
            let mark = share.withLock { $0.mark(appId) }
            let take: WebhookTake
            do {
                take = try await queue.take(appId, limit: count, lease: settings.lease)
            } catch {
                // What earlier takes of the round leased is delivered; the error is reported when nothing was.
                if jobs.isEmpty { throw error }
                break
            }
            share.withLock { share in
                share.started(appId, count: take.jobs.count)
                if take.jobs.isEmpty, let wait = take.nextDue {
                    share.rest(appId, until: clock.now + min(wait, settings.maxSkip), mark: mark)
                }
            }
            if take.left == 0, let score = view.scores[appId] {
                // A failed removal leaves the app indexed, to be found empty again.
                _ = try? await index.remove(appId, seenScore: score)
                view.scores[appId] = nil
                view.apps.removeAll { $0 == appId }
            }
            jobs += take.jobs
        }
        return jobs
    }

    /// Puts back in the index every app that has queued events and is missing from it (its addition failed after its
    /// event was queued). Visits every app, so it runs rarely; the queue of an earlier version is emptied first.
    private func reindex() async throws {
        let indexed = Set(try await index.apps().map(\.appId))
        let all = try await apps.allAppIds().filter { !indexed.contains($0) }
        for start in stride(from: 0, to: all.count, by: 500) {
            let batch = Array(all[start..<min(start + 500, all.count)])
            let counts = try await queue.counts(batch)
            for (appId, count) in zip(batch, counts) where count > 0 {
                try await index.add(appId)
            }
        }
    }

    // MARK: Delivering

    /// One attempt at `job`, then its settlement: delivered, rescheduled, or dropped.
    private func deliver(_ job: WebhookJob, with sender: WebhookSender) async {
        var metadata: Logger.Metadata = ["appId": "\(job.appId)", "event": "\(job.eventId)", "attempt": "\(job.attempt + 1)"]
        let app: AppRecord?
        do {
            app = try await apps.find(job.appId)
        } catch {
            // Left leased: it comes back when the lease ends.
            logger.debug("webhook app lookup failed", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            return
        }
        guard let app, job.generation.isEmpty || job.generation == app.generation else {
            // Deleted, or deleted and created again: the new app never receives the old one's events.
            logger.debug("webhook event dropped: its app is gone", metadata: metadata)
            await settle(job)
            return
        }
        guard let webhook = app.config.webhook else {
            logger.debug("webhook event skipped: the app has no webhook", metadata: metadata)
            await settle(job)
            return
        }
        switch await sender.post(job.body, to: webhook, now: clock.wallNow) {
        case .delivered:
            metrics.webhooksDelivered.increment()
            await settle(job)
        case .failed(let reason):
            metadata["reason"] = "\(reason)"
            let attempts = job.attempt + 1
            guard attempts < settings.maxAttempts else {
                metrics.webhooksDropped.increment()
                logger.warning("webhook event dropped after its last attempt", metadata: metadata)
                await settle(job)
                return
            }
            metrics.webhooksRetried.increment()
            let delay = settings.backoff(afterAttempt: job.attempt)
            logger.debug("webhook delivery failed, retrying", metadata: metadata.merging(["delay": "\(delay)"]) { $1 })
            do {
                try await queue.retry(job, attempts: attempts, after: delay)
            } catch {
                logger.warning("could not schedule a webhook retry", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            }
        }
    }

    /// Removes a job that needs no further attempt.
    private func settle(_ job: WebhookJob) async {
        do {
            try await queue.settle(job)
        } catch {
            logger.warning("could not remove a settled webhook event", metadata: ["event": "\(job.eventId)", "error": "\(error)"])
        }
    }
}

/// The dispatcher's ``WebhookFairShare``, shared by its read loop and its deliveries.
private final class SharedFairShare: Sendable {
    private let state: Mutex<WebhookFairShare>

    init(_ share: WebhookFairShare) {
        state = Mutex(share)
    }

    func withLock<Result>(_ body: (inout WebhookFairShare) -> Result) -> Result {
        state.withLock { body(&$0) }
    }
}
