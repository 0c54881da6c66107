import StatusCore

/// One pass over a kind of due-time index: per app, a sorted set of userIds scored by when something falls due for
/// them (custom status expiries, SPEC §10.2; offline graces, SPEC §10.3), with a sorted set of the apps that have one,
/// scored by when the app's earliest entry falls due (``RedisKeys/DueApps``).
/// No timer per user lives in memory: every node's housekeeping sweeps, each entry that fell due is leased to one node
/// (`due_take.lua`: it moves to the index's leases), handled on the user's keys, where the stored value decides, and
/// put back at the stored moment when that has not come (`due_done.lua`). A node that dies holding a lease, or fails
/// on an entry, leaves it to the next sweep once the lease ends; one app or one entry that fails stops no other.
///
/// SPEC §10.7 (the work grows with what is due, not with the tenants): a pass visits only the apps whose earliest entry
/// fell due (`due_apps_take.lua`, which claims them for a lease), and afterwards scores each by its earliest remaining
/// entry or lease, or drops it when its index is empty (`due_app_settle.lua`). A writer adds its entry to the index
/// first and then marks the app (``DueIndexStore/add(_:appId:index:userId:dueAt:)``), which moves the app's generation:
/// a sweep that took the app before the mark leaves the score the writer set (no later than its entry), so an entry is
/// never left behind by an app scored past it or dropped.
struct DueIndexSweep: Sendable {
    let store: DueIndexStore
    let registry: AppRegistry
    /// The apps that have such an index.
    let apps: RedisKeys.DueApps
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

    /// How long a taken entry (or app) is left to the node that took it.
    static let leaseMs: Int64 = 5000
    /// The most entries one sweep takes per app.
    static let batch = 200
    /// The most apps one sweep takes.
    static let appBatch = 1000

    /// What handling an entry came to.
    enum Outcome: Sendable {
        /// Handled (or nothing to do): the entry goes.
        case done
        /// Not due yet: the entry is put back at that time (epoch ms).
        case later(Int64)
    }

    /// Takes the entries due at `nowMs` of each app that has one and hands each to `handle` (the app, the userId, the
    /// entry's due time as written); an app deleted meanwhile is dropped from the apps once its index is gone. The first
    /// error is thrown once every app had its turn; an entry whose handling failed stays leased with the app's rest of
    /// the batch, and comes back when its lease ends (and so does the app, claimed as long).
    func run(
        nowMs: Int64,
        handle: (AppRecord, String, String) async throws -> Outcome
    ) async throws {
        try await store.adoptLegacy(apps)
        var failure: (any Error)?
        for (appId, generation) in try await store.dueApps(apps, nowMs: nowMs, claimMs: Self.leaseMs, limit: Self.appBatch) {
            do {
                let next = try await sweep(appId, nowMs: nowMs, handle: handle)
                try await store.settle(apps, appId: appId, generation: generation, next: next)
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
    }

    /// Sweeps one app; returns when its earliest remaining entry or lease falls due (nil: none is left).
    private func sweep(_ appId: String, nowMs: Int64, handle: (AppRecord, String, String) async throws -> Outcome) async throws -> Int64? {
        let keys = keys(RedisKeys(appId: appId))
        guard let app = try await registry.find(appId) else {
            // Deleted: its index goes with its keys; the app is dropped once it is gone.
            return try await store.earliest(keys)
        }
        let taken = try await store.take(keys, nowMs: nowMs, leaseMs: Self.leaseMs, limit: Self.batch)
        guard !taken.entries.isEmpty else { return try await store.earliest(keys) }
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
        return try await store.earliest(keys)
    }
}
