import Foundation
import Logging
import StatusCore

/// The durable queue of SPEC §8 state-change callbacks, one per app (``WebhookAppQueue``), so that one app's backlog
/// never stands in front of another's nor pushes it out (SPEC §10.7). ``WebhookDispatcher`` delivers from them.
struct WebhookQueue: Sendable {
    let queue: WebhookAppQueue
    let index: WebhookAppIndex
    /// The most undelivered events one app may have; past it the oldest are dropped.
    let maxPendingPerApp: Int
    /// Wakes this node's dispatcher when an event is queued here.
    let wakeup = WebhookWakeup()
    let logger: Logger

    /// The node's wall time, an event's `eventTime`.
    let clock: any NodeClock
    /// Counts the events dropped from a full queue.
    let metrics: NodeMetrics

    init(
        queue: WebhookAppQueue,
        index: WebhookAppIndex,
        maxPendingPerApp: Int,
        clock: any NodeClock,
        metrics: NodeMetrics,
        logger: Logger
    ) {
        self.clock = clock
        self.metrics = metrics
        self.queue = queue
        self.index = index
        self.maxPendingPerApp = maxPendingPerApp
        self.logger = logger
    }

    /// Queues one device-level transition when the app has a webhook; a queueing failure is logged. A login that
    /// kicked other devices lists them in `kickedDevices`.
    func enqueue(
        app: AppRecord,
        userId: String,
        deviceId: String,
        platform: String,
        action: (action: String, reason: String),
        statusType: StatusType,
        kickedDevices: [WebhookEvent.KickedDevice] = []
    ) async {
        let transition = WebhookEvent.Action.device(
            deviceId: deviceId,
            platform: platform,
            action: action.action,
            reason: action.reason,
            kickedDevices: kickedDevices
        )
        await enqueue(app: app, userId: userId, transition, statusType: statusType)
    }

    /// Queues a change of the user's custom status (`customStatusChange`) when the app has a webhook.
    func enqueueCustomStatusChange(app: AppRecord, userId: String, customStatus: String?, cleared: Bool, statusType: StatusType) async {
        await enqueueCustomStatusChange(
            app: app,
            userId: userId,
            customStatus: customStatus,
            reason: cleared ? "cleared" : "setCustomStatus",
            statusType: statusType
        )
    }

    /// SPEC §8 `customStatusChange` with its `reason` (`setCustomStatus`, `cleared`, or `expired`, SPEC §10.2).
    func enqueueCustomStatusChange(app: AppRecord, userId: String, customStatus: String?, reason: String, statusType: StatusType) async {
        await enqueue(app: app, userId: userId, .customStatus(customStatus: customStatus, reason: reason), statusType: statusType)
    }

    /// SPEC §8 `availabilityChange`: the availability the user chose (the own view: webhooks report invisible users as
    /// they are).
    func enqueueAvailabilityChange(app: AppRecord, userId: String, availability: Availability, statusType: StatusType) async {
        await enqueue(app: app, userId: userId, .availability(availability), statusType: statusType)
    }

    private func enqueue(app: AppRecord, userId: String, _ action: WebhookEvent.Action, statusType: StatusType) async {
        guard app.config.webhook != nil else { return }
        let event = WebhookEvent(appId: app.appId, userId: userId, action: action, statusType: statusType, eventTime: clock.nowMs)
        do {
            let body = try JSONCoding.string(event)
            let enqueued = try await queue.enqueue(appId: app.appId, body: body, generation: app.generation, bound: maxPendingPerApp)
            if enqueued.dropped > 0 {
                metrics.webhooksDropped.increment(by: enqueued.dropped)
                logger.warning(
                    "webhook events dropped: the app has too many undelivered",
                    metadata: ["appId": "\(app.appId)", "dropped": "\(enqueued.dropped)", "bound": "\(maxPendingPerApp)"]
                )
            }
            // After the event, never before: a dispatcher that finds the queue empty removes the app only if this
            // addition has not happened yet, and then it happens after the removal.
            if enqueued.first { try await index.add(app.appId) }
            wakeup.signalEnqueued()
        } catch {
            logger.warning("webhook enqueue failed", metadata: ["appId": "\(app.appId)", "error": "\(error)"])
        }
    }
}
