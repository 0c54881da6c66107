import Foundation
import RedisClient
import StatusCore

/// SPEC §10.2: clears custom statuses whose `customStatusExpiresAt` came, on whichever node, after any restart: no timer
/// per user in memory. setSelfStatus writes each expiry in its app's due-time index (``RedisKeys/expiries``, before the
/// status itself) and lists the app in ``RedisKeys/expiringApps``; the housekeeping of every node calls ``sweep()``
/// every quarter second. An entry that fell due is leased to one node (`expiry_take.lua`), cleared if the status still
/// expires then (`custom_status_expire.lua`, which publishes the change: events, and the webhook's `customStatusChange`
/// with reason `expired` from here), and removed unless the user set another expiry meanwhile (`expiry_done.lua`). A
/// node that dies while holding a lease leaves its entries to the others once the lease ends.
struct ExpirySweeper: Sendable {
    let services: ServerServices

    /// How long a taken entry is left to the node that took it.
    static let leaseMs: Int64 = 5000
    /// The most entries one sweep takes per app.
    static let batch = 200

    /// One pass over every app with expiries. Returns how many custom statuses were cleared.
    @discardableResult
    func sweep(nowMs: Int64 = WallClock.nowMs()) async throws -> Int {
        let redis = services.redis
        let scripts = services.scripts
        var cleared = 0
        for appId in try await redis.send("SMEMBERS", RedisKeys.expiringApps).array?.compactMap(\.string) ?? [] {
            let keys = RedisKeys(appId: appId)
            guard let app = try await services.apps.find(appId) else {
                // Deleted: its index went with its keys.
                if try await redis.send("EXISTS", keys.expiries).int == 0 { _ = try await redis.send("SREM", RedisKeys.expiringApps, appId) }
                continue
            }
            let taken = try await redis.evalScript(
                scripts.expiryTake,
                keys: [keys.expiries],
                arguments: [String(nowMs), String(Self.leaseMs), String(Self.batch)]
            )
            if case .error(let message) = taken { throw RedisClientError(kind: .server, message: message) }
            let values = taken.array?.compactMap(\.string) ?? []
            guard values.count >= 2 else { continue }
            var done: [String] = []
            var index = 0
            while index + 1 < values.count {
                let userId = values[index]
                let dueAt = values[index + 1]
                index += 2
                if let result = try await services.statuses.expireCustomStatus(appId: appId, userId: userId, dueAt: dueAt) {
                    cleared += 1
                    await services.webhooks.enqueueCustomStatusChange(
                        app: app,
                        userId: userId,
                        customStatus: nil,
                        reason: "expired",
                        statusType: result.reply.status.statusType
                    )
                    if app.logsRecentChanges {
                        _ = try await redis.pipeline(
                            RecentChanges.record(appId: appId, userId: userId, nowMs: WallClock.nowMs(), keepMs: services.recorder.keepMs(app.config))
                        )
                    }
                }
                done.append(userId)
            }
            _ = try await redis.evalScript(scripts.expiryDone, keys: [keys.expiries], arguments: [String(nowMs + Self.leaseMs)] + done)
        }
        return cleared
    }
}
