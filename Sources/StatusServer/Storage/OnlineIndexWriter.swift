import Synchronization

/// Writes the online index of each app (`presence_index.lua`) with a group commit (``GroupCommitQueue``): updates of
/// one app that arrive while its previous write is in flight go out together, in one script call.
///
/// Every connect and departure that moves `statusType` updates the index, in the app's own hash slot (so not in the
/// user's script). Under churn that was two script calls per connect+disconnect cycle, each costing Redis more in
/// script overhead than in its commands; batched, a busy app pays one call per round trip instead of one per change.
/// A caller still returns only once its own update is written: the index is as current as before.
final class OnlineIndexWriter: Sendable {
    /// A user's status as the index takes it.
    struct Update: Sendable, Equatable {
        var userId: String
        var version: Int64
        var online: Bool
    }

    /// The most updates in one script call.
    static let maxBatch = 128

    private struct Member: Sendable {
        var update: Update
        var keepMs: Int64
        var continuation: CheckedContinuation<Role, Never>
    }

    /// What a waiting caller is woken with.
    private enum Role: Sendable {
        /// Write this batch (the caller's update first) and hand on.
        case lead([Member])
        /// Its batch was written by another caller, with this outcome.
        case done(Result<Void, any Error>)
    }

    private let statuses: StatusRepository
    private let queues = Mutex<[String: GroupCommitQueue<Member>]>([:])
    private let writes = Atomic<Int>(0)

    init(statuses: StatusRepository) {
        self.statuses = statuses
    }

    /// Script calls made so far (each writes one batch).
    var batchesWritten: Int { writes.load(ordering: .relaxed) }

    /// Applies an update to the app's online index (in version order: an older version never undoes a newer one) and
    /// logs the user in the app's recent changes, kept `keepMs`; returns once it is written.
    func apply(appId: String, _ update: Update, keepMs: Int64) async throws {
        let role: Role = await withCheckedContinuation { continuation in
            let member = Member(update: update, keepMs: keepMs, continuation: continuation)
            let arrival = queues.withLock { $0[appId, default: GroupCommitQueue(maxBatch: Self.maxBatch)].arrive(member) }
            if case .lead(let batch) = arrival { continuation.resume(returning: .lead(batch)) }
        }
        switch role {
        case .done(let result): try result.get()
        case .lead(let batch): try await lead(appId: appId, batch)
        }
    }

    /// Writes a batch whose first member is the caller, wakes the others with the outcome, and hands the next batch to
    /// its first member.
    private func lead(appId: String, _ batch: [Member]) async throws {
        let result: Result<Void, any Error>
        do {
            writes.add(1, ordering: .relaxed)
            try await statuses.index(appId: appId, updates: batch.map(\.update), keepMs: batch.map(\.keepMs).max() ?? 0)
            result = .success(())
        } catch {
            result = .failure(error)
        }
        for member in batch.dropFirst() { member.continuation.resume(returning: .done(result)) }
        let next = queues.withLock { queues -> [Member]? in
            let next = queues[appId]?.finished()
            if queues[appId]?.isIdle == true { queues[appId] = nil }
            return next
        }
        if let next, let first = next.first { first.continuation.resume(returning: .lead(next)) }
        try result.get()
    }
}
