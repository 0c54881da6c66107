/// Writes the online index of each app (`presence_index.lua`) with a ``GroupCommit``: updates of one app that arrive
/// while its previous write is in flight go out together, in one script call.
///
/// Every connect and departure that moves `statusType` updates the index, in the app's own hash slot. On a single server
/// the connect's and the departure's own scripts write it (``DeviceConnect/Alongside``, ``DevicesRemove/Alongside``);
/// this writer serves a cluster, where the user's script cannot, and the changes no such script makes (the end of an
/// offline grace, backend logins, device state reports). Under churn on a cluster that was two script calls per
/// connect+disconnect cycle, each costing Redis more in script overhead than in its commands; batched, a busy app pays
/// one call per round trip instead of one per change.
/// A caller still returns only once its own update is written: the index is as current as before.
final class OnlineIndexWriter: Sendable {
    /// A user's status as the index takes it.
    struct Update: Sendable, Equatable {
        var userId: String
        var version: Int64
        var online: Bool
        /// The user's role: an online user is listed under it too (SPEC §10.6 `roles:` snapshots).
        var role: String? = nil
    }

    /// The most updates in one script call.
    static let maxBatch = 128

    private let commits: GroupCommit<(update: Update, keepMs: Int64)>

    init(statuses: StatusRepository) {
        commits = GroupCommit(maxBatch: Self.maxBatch, linger: .churn) { appId, items in
            try await statuses.index(appId: appId, updates: items.map(\.update), keepMs: items.map(\.keepMs).max() ?? 0)
        }
    }

    /// Script calls made so far (each writes one batch).
    var batchesWritten: Int { commits.batchesWritten }

    /// Applies an update to the app's online index (in version order: an older version never undoes a newer one) and
    /// logs the user in the app's recent changes, kept `keepMs`; returns once it is written. A user coming online is a
    /// connect whose welcome waits for this write, so it never lingers (``GroupCommitLinger``); a departure may.
    func apply(appId: String, _ update: Update, keepMs: Int64) async throws {
        try await commits.commit((update, keepMs), group: appId, mayLinger: !update.online)
    }
}
