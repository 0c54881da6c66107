import NIOCore

/// A task executor that runs jobs on one NIO event loop.
///
/// An HTTP connection's request handlers run with this executor preferred (``DeviceServerChannel``), so a request is
/// parsed, handled, sent to Redis (on a pooled connection of the same loop, see `RedisClient`), answered and written
/// on one thread. Without it every request crossed between the event loop and the global concurrency pool four times
/// (request in, Redis out, Redis reply, response out), each a wake-up of another thread; that cost more CPU than
/// `GET /healthz` itself. Handlers do no blocking work, so running them on the loop does not stall it.
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
