import Foundation
import Logging
import RedisClient
import StatusCore

/// The durable queue of SPEC §8 state-change callbacks: a Redis stream that survives a restart of statusd.
/// ``WebhookDispatcher`` delivers from it.
struct WebhookQueue: Sendable {
    let redis: RedisClient
    let logger: Logger

    /// The stream every node appends to and delivers from.
    static let stream = "st:webhooks"
    /// The consumer group of the delivering nodes.
    static let group = "statusd"
    /// The stream is trimmed to about this many entries, so an unreachable receiver cannot grow Redis without bound.
    static let maxLength = 1_000_000

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
        let change = WebhookEvent.Action.customStatus(customStatus: customStatus, reason: cleared ? "cleared" : "setCustomStatus")
        await enqueue(app: app, userId: userId, change, statusType: statusType)
    }

    private func enqueue(app: AppRecord, userId: String, _ action: WebhookEvent.Action, statusType: StatusType) async {
        guard app.config.webhook != nil else { return }
        let event = WebhookEvent(appId: app.appId, userId: userId, action: action, statusType: statusType, eventTime: WallClock.nowMs())
        do {
            let body = try JSONCoding.string(event)
            _ = try await redis.send("XADD", Self.stream, "MAXLEN", "~", String(Self.maxLength), "*", "app", app.appId, "body", body, "attempt", "0")
        } catch {
            logger.warning("webhook enqueue failed", metadata: ["error": "\(error)"])
        }
    }
}
