import Foundation
import StatusCore

/// SPEC §10.3: ends the offline graces that ran out, on whichever node, after any restart, including the death of the
/// node that started them: no timer per user in memory. A drop that may start a grace writes the app's due-time entry
/// first (``RedisKeys/graces``, the app marked in ``RedisKeys/graceApps``); the housekeeping of every node calls ``sweep()``
/// every quarter second (``DueIndexSweep``). A user no device reconnected for goes `offline` (`grace_end.lua`, which
/// publishes the change); their online index entry follows, and a custom status cleared with it is the webhook's
/// `customStatusChange` (the drop itself was posted when it happened). The same index ends the grace of a user who
/// became invisible while seen online (SPEC §10.5: shown as a drop), whom the public then sees offline.
struct GraceSweeper: Sendable {
    /// The sweep of the grace indexes (``DueIndexSweep/graces(store:apps:)``).
    let dueIndex: DueIndexSweep
    /// The node\'s wall time: what is due now.
    let clock: any NodeClock
    let statuses: StatusRepository
    /// What follows the change, as after any departure (``PresenceOperations/recordChange(app:userId:change:reply:clearedCustomStatus:indexed:)``).
    let presence: PresenceOperations

    /// One pass over the apps with a grace that ends. Returns how many users went offline.
    @discardableResult
    func sweep(nowMs: Int64? = nil) async throws -> Int {
        let nowMs = nowMs ?? clock.nowMs
        var ended = 0
        try await dueIndex.run(nowMs: nowMs) { app, userId, _ in
            let outcome = try await statuses.endGrace(
                appId: app.appId,
                userId: userId,
                retentionSeconds: app.config.subscriptionRetentionSeconds
            )
            switch outcome {
            case .none:
                return .done
            case .later(let until):
                return .later(until)
            case .ended(let reply, let cleared, let still):
                ended += 1
                await presence.recordChange(app: app, userId: userId, change: .status, reply: reply, clearedCustomStatus: cleared)
                return still.map { .later($0) } ?? .done
            }
        }
        return ended
    }
}
