import Foundation
import StatusCore

/// SPEC §10.2: clears custom statuses whose `customStatusExpiresAt` came, on whichever node, after any restart: no timer
/// per user in memory. setSelfStatus writes each expiry in its app's due-time index (``RedisKeys/expiries``, before the
/// status itself) and lists the app in ``RedisKeys/expiringApps``; the housekeeping of every node calls ``sweep()``
/// every quarter second (``DueIndexSweep``). An entry that fell due is cleared if the status still expires then
/// (`custom_status_expire.lua`, which publishes the change: events, and the webhook's `customStatusChange` with reason
/// `expired` from here). Whether the moment came is read on the Redis clock: an entry taken early by a node whose clock
/// runs ahead is put back at its moment.
struct ExpirySweeper: Sendable {
    /// The sweep of the expiry indexes (``DueIndexSweep/expiries(store:apps:)``).
    let dueIndex: DueIndexSweep
    /// The node\'s wall time: what is due now.
    let clock: any NodeClock
    let statuses: StatusRepository
    let webhooks: WebhookQueue
    let recentChanges: RecentChangesLog
    let recorder: ChangeRecorder

    /// One pass over every app with expiries. Returns how many custom statuses were cleared.
    @discardableResult
    func sweep(nowMs: Int64? = nil) async throws -> Int {
        let nowMs = nowMs ?? clock.nowMs
        var cleared = 0
        try await dueIndex.run(nowMs: nowMs) { app, userId, dueAt in
            let result: StatusReply
            switch try await statuses.expireCustomStatus(appId: app.appId, userId: userId, dueAt: dueAt) {
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
