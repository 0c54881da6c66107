import Foundation
import RedisClient
import StatusCore

/// SPEC §10.2: clears custom statuses whose `customStatusExpiresAt` came, on whichever node, after any restart: no timer
/// per user in memory. setSelfStatus writes each expiry in its app's due-time index (``RedisKeys/expiries``, before the
/// status itself) and lists the app in ``RedisKeys/expiringApps``; the housekeeping of every node calls ``sweep()``
/// every quarter second (``DueIndexSweep``). An entry that fell due is cleared if the status still expires then
/// (`custom_status_expire.lua`, which publishes the change: events, and the webhook's `customStatusChange` with reason
/// `expired` from here).
struct ExpirySweeper: Sendable {
    let services: ServerServices

    /// One pass over every app with expiries. Returns how many custom statuses were cleared.
    @discardableResult
    func sweep(nowMs: Int64? = nil) async throws -> Int {
        let nowMs = nowMs ?? services.clock.nowMs
        var cleared = 0
        let sweep = DueIndexSweep(services: services, apps: RedisKeys.expiringApps, index: \.expiries)
        try await sweep.run(nowMs: nowMs) { app, userId, dueAt in
            guard let result = try await services.statuses.expireCustomStatus(appId: app.appId, userId: userId, dueAt: dueAt) else {
                return .done
            }
            cleared += 1
            await services.webhooks.enqueueCustomStatusChange(
                app: app,
                userId: userId,
                customStatus: nil,
                reason: "expired",
                statusType: result.reply.status.statusType
            )
            if app.logsRecentChanges {
                _ = try await services.redis.pipeline(
                    RecentChanges.record(appId: app.appId, userId: userId, nowMs: services.clock.nowMs, keepMs: services.recorder.keepMs(app.config))
                )
            }
            return .done
        }
        return cleared
    }
}
