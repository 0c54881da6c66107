import StatusCore

/// One pass over a kind of due-time index: per app, a sorted set of userIds scored by when something falls due for
/// them (custom status expiries, SPEC §10.2; offline graces, SPEC §10.3), with a set listing the apps that have one.
/// No timer per user lives in memory: every node's housekeeping sweeps, each entry that fell due is leased to one node
/// (`due_take.lua`: it moves to the index's leases), handled on the user's keys, where the stored value decides, and
/// put back at the stored moment when that has not come (`due_done.lua`). A node that dies holding a lease, or fails
/// on an entry, leaves it to the next sweep once the lease ends; one app or one entry that fails stops no other.
struct DueIndexSweep: Sendable {
    let store: DueIndexStore
    let registry: AppRegistry
    /// The set of appIds that have (or had) such an index.
    let apps: String
    /// The app's index and its leases.
    let keys: @Sendable (RedisKeys) -> DueIndexKeys

    /// The sweep of the custom status expiries (SPEC §10.2).
    static func expiries(store: DueIndexStore, apps: AppRegistry) -> DueIndexSweep {
        DueIndexSweep(store: store, registry: apps, apps: RedisKeys.expiringApps) { DueIndexKeys(index: $0.expiries, leases: $0.expiryLeases) }
    }

    /// The sweep of the offline graces (SPEC §10.3).
    static func graces(store: DueIndexStore, apps: AppRegistry) -> DueIndexSweep {
        DueIndexSweep(store: store, registry: apps, apps: RedisKeys.graceApps) { DueIndexKeys(index: $0.graces, leases: $0.graceLeases) }
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
    /// written); an app deleted meanwhile is dropped from the list once its index is gone. The first error is thrown
    /// once every app had its turn; an entry whose handling failed stays leased with the app's rest of the batch, and comes
    /// back when its lease ends.
    func run(
        nowMs: Int64,
        handle: (AppRecord, String, String) async throws -> Outcome
    ) async throws {
        var failure: (any Error)?
        for appId in try await store.apps(in: apps) {
            do {
                try await sweep(appId, nowMs: nowMs, handle: handle)
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
    }

    private func sweep(_ appId: String, nowMs: Int64, handle: (AppRecord, String, String) async throws -> Outcome) async throws {
        let keys = keys(RedisKeys(appId: appId))
        guard let app = try await registry.find(appId) else {
            // Deleted: its index went with its keys.
            try await store.forgetIfGone(appId, in: apps, index: keys.index)
            return
        }
        let taken = try await store.take(keys, nowMs: nowMs, leaseMs: Self.leaseMs, limit: Self.batch)
        guard !taken.entries.isEmpty else { return }
        var finished: [(userId: String, dueAt: Int64?)] = []
        var failure: (any Error)?
        for (userId, dueAt) in taken.entries {
            do {
                switch try await handle(app, userId, dueAt) {
                case .done: finished.append((userId, nil))
                case .later(let dueAt): finished.append((userId, dueAt))
                }
            } catch {
                // The rest stay leased too: what failed here (Redis away, most likely) would fail for them as well.
                failure = error
                break
            }
        }
        try await store.finish(keys, entries: finished, leaseScore: taken.leaseScore)
        if let failure { throw failure }
    }
}
