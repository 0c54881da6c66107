import NIOCore
import ServiceLifecycle
import Synchronization

/// The Redis work of device sessions, run by a service: requests from device sockets, departures, relationship loads;
/// a second one, running fewer at a time, takes the admissions (token check and connect, ``DeviceGateway/connects``).
///
/// Sessions themselves hold no task; what they need done asynchronously is queued here, at most ``capacity`` jobs, and
/// run by ``concurrency`` worker tasks, children of this service, each taking the next job when it is done with one. A
/// job refused because the queue is full is the caller's to answer: an upgrade is refused with 503, a request answered
/// `UNAVAILABLE`, a departure left to the node's own reconciliation (HousekeepingService), which files it within one
/// lease period.
///
/// Workers that live as long as the service, rather than a child task per job: a new task costs its own allocation,
/// and the first time a job's calls go deeper than the task's first slab (a connect or a departure does, through the
/// repositories down to the Redis client), a further slab from `malloc`, of a kilobyte or more, freed with the task. A
/// worker keeps its slabs from one job to the next.
///
/// Where the workers run is the queue's ``Placement``. The sessions' queue inherits: in the binary, which prefers the
/// node's loop-affine executor for every service (``withNodeTaskExecutor(_:)``), a worker handed a job by a socket's
/// event loop runs it on that loop, its Redis commands go out on a connection of the same loop (`RedisClient` prefers
/// one), and their replies resume it there, so a departure or a device's request runs on one thread. The connects'
/// queue takes a bounded share of the loops (``SpillingLoopTaskExecutor``): all of a storm's connects on the loops held
/// up the deliveries and the upgrades queued behind them. Jobs do no blocking work either way.
final class DeviceWorkQueue: Service, Sendable {
    typealias Job = @Sendable () async -> Void

    /// Where the workers run.
    enum Placement: Sendable {
        /// Where the service's task prefers.
        case inherited
        /// On this executor.
        case executor(any TaskExecutor)
        /// In a node run under ``withNodeTaskExecutor(_:)``: on the loop that hands a job over while fewer than
        /// `share` of the queue's jobs wait there, else on the global pool (``SpillingLoopTaskExecutor``). Elsewhere
        /// (nodes built in a test process) on the global pool.
        case loopsUpTo(share: Int)
    }

    let capacity: Int
    let concurrency: Int
    let placement: Placement
    private let state: Mutex<WorkQueueState<Job, CheckedContinuation<Job?, Never>>>

    init(capacity: Int = 65_536, concurrency: Int = 256, placement: Placement = .inherited) {
        self.capacity = capacity
        self.concurrency = concurrency
        self.placement = placement
        self.state = Mutex(WorkQueueState(capacity: capacity))
    }

    /// The executor the workers prefer, nil to inherit.
    var executor: (any TaskExecutor)? {
        switch placement {
        case .inherited: nil
        case .executor(let executor): executor
        case .loopsUpTo(let share):
            LoopAffineTaskExecutor.node.map { SpillingLoopTaskExecutor(loops: $0.loops, share: share) }
                ?? globalConcurrentExecutor
        }
    }

    /// Queues a job; false when the queue is full (or the node is stopping) and the job will not run.
    @discardableResult
    func submit(_ job: @escaping Job) -> Bool {
        switch state.withLock({ $0.submit(job) }) {
        case .handOver(let worker):
            worker.resume(returning: job)
            return true
        case .queued:
            return true
        case .refused:
            return false
        }
    }

    /// Runs jobs until graceful shutdown (or cancellation); jobs queued before it still run.
    func run() async {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                let executor = self.executor
                await withDiscardingTaskGroup { group in
                    for _ in 0..<concurrency {
                        // `addTask(executorPreference: nil)` would drop the preference the service's task inherited.
                        if let executor {
                            group.addTask(executorPreference: executor) { await self.work() }
                        } else {
                            group.addTask { await self.work() }
                        }
                    }
                }
            } onGracefulShutdown: {
                self.finish()
            }
        } onCancel: {
            self.finish()
        }
    }

    /// One worker: runs jobs until the queue is finished and empty.
    private func work() async {
        while let job = await next() {
            await job()
        }
    }

    /// The next job, waiting for one while the queue is empty; nil once it is finished and empty.
    private func next() async -> Job? {
        await withCheckedContinuation { worker in
            switch state.withLock({ $0.next(worker) }) {
            case .run(let job): worker.resume(returning: job)
            case .stop: worker.resume(returning: nil)
            case .wait: break
            }
        }
    }

    /// No job is taken any more; the workers run what is queued, then end.
    private func finish() {
        let idle = state.withLock { $0.finish() }
        for worker in idle { worker.resume(returning: nil) }
    }
}
