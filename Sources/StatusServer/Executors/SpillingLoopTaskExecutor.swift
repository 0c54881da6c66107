import NIOCore
import NIOPosix
import Synchronization

/// The connects' executor in the binary: a job runs on the event loop that hands it over (the loop of an upgrade's
/// socket, or of the Redis connection whose reply resumes a connect) while fewer than ``share`` of its jobs wait on
/// that loop; past that, and from any other thread, it runs on the global pool.
///
/// On the global pool, each connect woke a pool thread for its turn and again for each Redis reply, and each wake-up is
/// a `futex` call on both sides. With everything on the loops a connect+disconnect cycle cost about a tenth less, but a
/// reconnect storm's thousands of connects then queued on the loops ahead of the deliveries and the upgrades still to
/// be read, and the survivors' own events waited (docs/benchmarks.md). With a share, a loop runs a few connect steps
/// between its own work, which is all a steady churn asks; a storm's excess goes to the pool, as it did.
///
/// Only jobs handed over on one of ``loops`` are counted, on that loop's own thread, so the counts need no ordering.
final class SpillingLoopTaskExecutor: TaskExecutor, Sendable {
    /// Where a job goes.
    enum Placement: Equatable {
        /// The loop at this index of ``loops``.
        case loop(Int)
        case globalPool
    }

    let loops: [any EventLoop]
    /// How many of this executor's jobs may wait on one loop at once.
    let share: Int
    private let waiting: [WaitingCount]

    private final class WaitingCount: Sendable {
        let count = Atomic(0)
    }

    init(loops: [any EventLoop], share: Int) {
        precondition(!loops.isEmpty && share > 0, "a spilling executor needs a loop and a share of at least one job")
        self.loops = loops
        self.share = share
        self.waiting = loops.map { _ in WaitingCount() }
    }

    /// Where a job handed over now would go: on the current thread's loop (at `loopIndex` of ``loops``; nil when the
    /// thread is none of them) while fewer than `share` jobs wait there, else on the global pool.
    static func placement(loopIndex: Int?, waiting: Int, share: Int) -> Placement {
        guard let loopIndex, waiting < share else { return .globalPool }
        return .loop(loopIndex)
    }

    /// The placement of a job handed over on the current thread.
    var placementForNextJob: Placement {
        let index = loops.indexOfCurrentLoop
        let waiting = index.map { self.waiting[$0].count.load(ordering: .relaxed) } ?? 0
        return Self.placement(loopIndex: index, waiting: waiting, share: share)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        switch placementForNextJob {
        case .loop(let index):
            let job = UnownedJob(job)
            let waiting = self.waiting[index]
            waiting.count.wrappingAdd(1, ordering: .relaxed)
            loops[index].execute {
                waiting.count.wrappingSubtract(1, ordering: .relaxed)
                job.runSynchronously(on: self.asUnownedTaskExecutor())
            }
        case .globalPool:
            globalConcurrentExecutor.enqueue(job)
        }
    }
}
