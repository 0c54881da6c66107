import NIOCore
import NIOPosix
import Synchronization

/// A task executor that runs a job on the event loop of the thread that enqueues it, when that is an event loop, and
/// on the next of `loops` in turn otherwise.
///
/// A task resumed by an event loop (a future or a continuation completed in a channel handler) then goes on running on
/// that same thread, queued behind what the loop is doing, instead of waking a thread of the global concurrency pool:
/// a wake-up is a `futex` call on each side and a cache gone cold. That is what the node's own tasks are: Hummingbird's
/// task per accepted connection, which waits for the connection's first request to be handed over; the fan-out's
/// consumer of the bus, which the bus connection's loop wakes with each batch of messages; the sessions' workers
/// (``DeviceWorkQueue``), handed departures and requests by their sockets' loops. On the global pool they woke another
/// thread about 24 times per connect+disconnect cycle, 7.6 on the loops (docs/benchmarks.md).
///
/// Jobs must not block, as on any event loop. Work that must be timely (the node's lease, ``HousekeepingService``) runs
/// on the global pool instead, where a burst of work on the loops cannot hold it up. The connects, which a storm brings
/// by the thousand (``DeviceGateway``), take only a bounded share of the loops (``SpillingLoopTaskExecutor``).
final class LoopAffineTaskExecutor: TaskExecutor, Sendable {
    /// The node's executor, while the binary runs its node under it (``withNodeTaskExecutor(_:)``); nil in processes
    /// that run nodes on the global pool (the tests). Work that picks its own placement asks it for the loops.
    @TaskLocal static var node: LoopAffineTaskExecutor?

    let loops: [any EventLoop]
    private let nextLoop = Atomic(0)

    init(loops: [any EventLoop]) {
        precondition(!loops.isEmpty, "a loop-affine executor needs at least one loop")
        self.loops = loops
    }

    convenience init(group: any EventLoopGroup) {
        self.init(loops: Array(group.makeIterator()))
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let loop = self.loopForNextJob
        loop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }

    /// The loop a job enqueued now runs on: the current thread's, when it is one of ``loops``.
    var loopForNextJob: any EventLoop {
        if let index = loops.indexOfCurrentLoop { return loops[index] }
        return loops[nextLoop.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count]
    }
}

extension Array where Element == any EventLoop {
    /// The index of the current thread's event loop among these, nil when the thread is none of them.
    var indexOfCurrentLoop: Int? {
        guard let current = MultiThreadedEventLoopGroup.currentEventLoop else { return nil }
        return firstIndex { $0 === current }
    }
}

/// Runs `body` with the node's loop-affine executor preferred (``LoopAffineTaskExecutor``, on the loops of
/// `MultiThreadedEventLoopGroup.singleton`, the group the server and the Redis client use): the tasks it starts, the
/// services of a service group among them, run on the event loop that resumes them, except the work that asks for the
/// global pool (the lease) or for a bounded share of the loops (the connects, ``SpillingLoopTaskExecutor``). The binary
/// runs its node this way. Tests build many nodes in one process on the same two loops, which no deployment does: they
/// run them on the global pool, as a node embedded without this would, and test the executor itself apart.
public func withNodeTaskExecutor<Result: Sendable>(_ body: () async throws -> Result) async rethrows -> Result {
    let executor = LoopAffineTaskExecutor(group: MultiThreadedEventLoopGroup.singleton)
    return try await LoopAffineTaskExecutor.$node.withValue(executor) {
        try await withTaskExecutorPreference(executor) {
            try await body()
        }
    }
}
