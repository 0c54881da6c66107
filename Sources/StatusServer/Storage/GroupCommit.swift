import Synchronization

/// A group commit: writes to one key group (an app's online index, the node's device list) that callers make while an
/// earlier write to the group is in flight wait, and go out together as the next write (``GroupCommitQueue`` decides,
/// this class carries it out). No task of its own: the first waiting caller writes the next batch.
///
/// Every caller returns once its own item is written (or throws the batch's error): what it wrote is as current as if
/// it had written alone. A lone caller writes at once; on a busy node it first lingers a moment for company
/// (``GroupCommitLinger``).
final class GroupCommit<Item: Sendable>: Sendable {
    /// Writes one batch of a group, in the order given.
    typealias Write = @Sendable (_ group: String, _ items: [Item]) async throws -> Void

    private struct Member: Sendable {
        var item: Item
        var continuation: CheckedContinuation<Role, Never>
    }

    /// What a waiting caller is woken with.
    private enum Role: Sendable {
        /// Write this batch (the caller's item first) and hand on. A batch handed on by the write before it gathered its
        /// company while that write was in flight, and goes at once; a caller that found the group idle may linger.
        case lead([Member], handedOn: Bool)
        /// Its batch was written by another caller, with this outcome.
        case done(Result<Void, any Error>)
    }

    let maxBatch: Int
    let linger: GroupCommitLinger
    private let write: Write
    private let queues = Mutex<[String: GroupCommitQueue<Member>]>([:])
    private let batches = Atomic<Int>(0)
    /// When the last batch of any group ended, in nanoseconds since ``origin`` (`Int64.min`: none yet).
    private let lastWriteEnded = Atomic<Int64>(.min)
    private let origin = ContinuousClock.now

    init(maxBatch: Int, linger: GroupCommitLinger = .none, write: @escaping Write) {
        self.maxBatch = maxBatch
        self.linger = linger
        self.write = write
    }

    /// Batches written so far.
    var batchesWritten: Int { batches.load(ordering: .relaxed) }

    /// Writes `item` with whatever else of `group` is waiting; returns once it is written. A caller someone waits on
    /// (a connect, whose welcome follows the write) passes `mayLinger: false`: leading a batch, it writes at once.
    func commit(_ item: Item, group: String, mayLinger: Bool = true) async throws {
        let role: Role = await withCheckedContinuation { continuation in
            let member = Member(item: item, continuation: continuation)
            let maxBatch = self.maxBatch
            let arrival = queues.withLock { $0[group, default: GroupCommitQueue(maxBatch: maxBatch)].arrive(member) }
            if case .lead(let batch) = arrival { continuation.resume(returning: .lead(batch, handedOn: false)) }
        }
        switch role {
        case .done(let result): try result.get()
        case .lead(let batch, let handedOn): try await lead(group: group, batch, lingering: mayLinger && !handedOn)
        }
    }

    /// Writes a batch whose first member is the caller, wakes the others with the outcome, and hands the next batch to
    /// its first member.
    private func lead(group: String, _ batch: [Member], lingering: Bool) async throws {
        var batch = batch
        if lingering, linger.lingers(sinceLastWrite: sinceLastWrite()) {
            // Cancelled meanwhile, the leader still writes: its batch's members wait for it.
            await LoopSleep.wait(linger.linger)
            let room = maxBatch - batch.count
            batch += queues.withLock { $0[group]?.gather(upTo: room) ?? [] }
        }
        let result: Result<Void, any Error>
        do {
            batches.add(1, ordering: .relaxed)
            try await write(group, batch.map(\.item))
            result = .success(())
        } catch {
            result = .failure(error)
        }
        lastWriteEnded.store(Self.nanoseconds(since: origin), ordering: .relaxed)
        for member in batch.dropFirst() { member.continuation.resume(returning: .done(result)) }
        let next = queues.withLock { queues -> [Member]? in
            let next = queues[group]?.finished()
            if queues[group]?.isIdle == true { queues[group] = nil }
            return next
        }
        if let next, let first = next.first { first.continuation.resume(returning: .lead(next, handedOn: true)) }
        try result.get()
    }

    private func sinceLastWrite() -> Duration? {
        let ended = lastWriteEnded.load(ordering: .relaxed)
        guard ended != .min else { return nil }
        return .nanoseconds(Self.nanoseconds(since: origin) - ended)
    }

    private static func nanoseconds(since origin: ContinuousClock.Instant) -> Int64 {
        let (seconds, attoseconds) = (ContinuousClock.now - origin).components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
