import StatusCore

/// One pass over a kind of due-time index: per app, a sorted set of userIds scored by when something falls due for
/// them (custom status expiries, SPEC §10.2; offline graces, SPEC §10.3), with a set listing the apps that have one.
/// No timer per user lives in memory: every node's housekeeping sweeps, each entry that fell due is leased to one node
/// (`due_take.lua`), handled, and removed unless it was written again meanwhile (`due_done.lua`). A node that dies
/// holding a lease leaves its entries to the others once the lease ends.
struct DueIndexSweep: Sendable {
    let store: DueIndexStore
    let registry: AppRegistry
    /// The set of appIds that have (or had) such an index.
    let apps: String
    /// The app's index.
    let index: @Sendable (RedisKeys) -> String

    /// The sweep of the custom status expiries (SPEC §10.2).
    static func expiries(store: DueIndexStore, apps: AppRegistry) -> DueIndexSweep {
        DueIndexSweep(store: store, registry: apps, apps: RedisKeys.expiringApps, index: \.expiries)
    }

    /// The sweep of the offline graces (SPEC §10.3).
    static func graces(store: DueIndexStore, apps: AppRegistry) -> DueIndexSweep {
        DueIndexSweep(store: store, registry: apps, apps: RedisKeys.graceApps, index: \.graces)
    }

    /// How long a taken entry is left to the node that took it.
    static let leaseMs: Int64 = 5000
    /// The most entries one sweep takes per app.
    static let batch = 200

    /// What handling an entry came to.
    enum Outcome: Sendable {
        /// Handled (or nothing to do): the entry goes.
        case done
        /// Not due yet: the entry is put back at that time (epoch ms).
        case later(Int64)
    }

    /// Takes each app's entries due at `nowMs` and hands each to `handle` (the app, the userId, the entry's due time as
    /// written); an app deleted meanwhile is dropped from the list once its index is gone.
    func run(
        nowMs: Int64,
        handle: (AppRecord, String, String) async throws -> Outcome
    ) async throws {
        for appId in try await store.apps(in: apps) {
            let key = index(RedisKeys(appId: appId))
            guard let app = try await registry.find(appId) else {
                // Deleted: its index went with its keys.
                try await store.forgetIfGone(appId, in: apps, index: key)
                continue
            }
            let taken = try await store.take(key, nowMs: nowMs, leaseMs: Self.leaseMs, limit: Self.batch)
            guard !taken.isEmpty else { continue }
            var done: [String] = []
            var later: [(userId: String, dueAt: Int64)] = []
            for (userId, dueAt) in taken {
                switch try await handle(app, userId, dueAt) {
                case .done: done.append(userId)
                case .later(let dueAt): later.append((userId, dueAt))
                }
            }
            // An entry put back is no longer at the lease's score, so due_done leaves it.
            try await store.finish(key, later: later, done: done, leaseScore: nowMs + Self.leaseMs)
        }
    }
}
