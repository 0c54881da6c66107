import Foundation
import StatusCore

/// SPEC §10.2: clears custom statuses whose `customStatusExpiresAt` came, on whichever node, after any restart: no timer
/// per user in memory. setSelfStatus writes each expiry in its app's due-time index (``RedisKeys/expiries``, before the
/// status itself and again after it, each time with `ZADD LT`) and marks the app in ``RedisKeys/expiringApps`` to be
/// swept by then; the housekeeping of every node calls ``sweep()`` every quarter second (``DueIndexSweep``), which
/// visits only the apps with an entry due. The index and the status live
/// in different slots, so an entry's time may differ from the stored expiry; the stored one decides: an entry that fell
/// due clears the custom status if its stored moment came on the Redis clock (`custom_status_expire.lua`, which
/// publishes the change: events, and the webhook's `customStatusChange` with reason `expired` from here), goes back at
/// that moment if not (unless an earlier entry was written meanwhile), and goes only when nothing expiring is stored.
/// So whatever custom status is stored with an expiry is cleared within a sweep of its moment, whatever the order in
/// which racing writes, sweeps, and nodes that die holding a lease reach Redis.
struct ExpirySweeper: Sendable {
    /// The sweep of the expiry indexes (``DueIndexSweep/expiries(store:apps:)``).
    let dueIndex: DueIndexSweep
    /// The node\'s wall time: what is due now.
    let clock: any NodeClock
    let statuses: StatusRepository
    let webhooks: WebhookQueue
    let recentChanges: RecentChangesLog
    let recorder: ChangeRecorder

    /// One pass over the apps with an expiry due. Returns how many custom statuses were cleared.
    @discardableResult
    func sweep(nowMs: Int64? = nil) async throws -> Int {
        let nowMs = nowMs ?? clock.nowMs
        var cleared = 0
        try await dueIndex.run(nowMs: nowMs) { app, userId, _ in
            let result: StatusReply
            switch try await statuses.expireCustomStatus(appId: app.appId, userId: userId) {
            case .nothing: return .done
            case .later(let expiresAt): return .later(expiresAt)
            case .cleared(let reply): result = reply
            }
            cleared += 1
            await webhooks.enqueueCustomStatusChange(
                app: app,
                userId: userId,
                customStatus: nil,
                reason: "expired",
                statusType: result.status.statusType
            )
            if app.logsRecentChanges {
                try await recentChanges.record(appId: app.appId, userId: userId, nowMs: clock.nowMs, keepMs: recorder.keepMs(app.config))
            }
            return .done
        }
        return cleared
    }
}
