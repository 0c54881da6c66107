import ServiceLifecycle

/// The Redis work of device sessions, run by a service: requests from device sockets, departures, relationship loads;
/// a second one, running fewer at a time, takes the admissions (token check and connect, ``DeviceGateway/connects``).
///
/// Sessions themselves hold no task; what they need done asynchronously is queued here and run as child tasks of this
/// service, at most ``concurrency`` at a time, from a queue bounded at ``capacity`` jobs. A job refused because the
/// queue is full is the caller's to answer: an upgrade is refused with 503, a request answered `UNAVAILABLE`, a
/// departure left to the node's own reconciliation (HousekeepingService), which files it within one lease period.
final class DeviceWorkQueue: Service, Sendable {
    typealias Job = @Sendable () async -> Void

    let capacity: Int
    let concurrency: Int
    private let jobs: AsyncStream<Job>
    private let continuation: AsyncStream<Job>.Continuation

    init(capacity: Int = 65_536, concurrency: Int = 256) {
        self.capacity = capacity
        self.concurrency = concurrency
        (jobs, continuation) = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .bufferingOldest(capacity))
    }

    /// Queues a job; false when the queue is full (or the node is stopping) and the job will not run.
    @discardableResult
    func submit(_ job: @escaping Job) -> Bool {
        if case .enqueued = continuation.yield(job) { return true }
        return false
    }

    /// Runs jobs until graceful shutdown; jobs queued before it still run.
    func run() async {
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for await job in jobs {
                    if running >= concurrency {
                        await group.next()
                        running -= 1
                    }
                    group.addTask { await job() }
                    running += 1
                }
            }
        } onGracefulShutdown: {
            self.continuation.finish()
        }
    }
}
