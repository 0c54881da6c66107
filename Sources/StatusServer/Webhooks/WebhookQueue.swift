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

    /// Queues one device-level transition when the app has a webhook; a queueing failure is logged.
    func enqueue(
        app: AppRecord,
        userId: String,
        deviceId: String,
        platform: String,
        action: (action: String, reason: String),
        statusType: StatusType
    ) async {
        guard app.config.webhook != nil else { return }
        let event = WebhookEvent(
            appId: app.appId,
            userId: userId,
            deviceId: deviceId,
            platform: platform,
            action: action.action,
            reason: action.reason,
            statusType: statusType.rawValue,
            eventTime: WallClock.nowMs()
        )
        do {
            let body = try JSONCoding.string(event)
            _ = try await redis.send("XADD", Self.stream, "MAXLEN", "~", String(Self.maxLength), "*", "app", app.appId, "body", body, "attempt", "0")
        } catch {
            logger.warning("webhook enqueue failed", metadata: ["error": "\(error)"])
        }
    }
}

/// The SPEC §8 callback body.
struct WebhookEvent: Sendable, Codable, Hashable {
    var event = "stateChange"
    var appId: String
    var userId: String
    var deviceId: String
    var platform: String
    var action: String
    var reason: String
    var statusType: String
    var eventTime: Int64
}
