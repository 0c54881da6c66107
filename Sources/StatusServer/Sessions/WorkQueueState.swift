import NIOCore

/// The state of ``DeviceWorkQueue``: the jobs waiting (at most `capacity`), the workers waiting for one, and whether
/// the queue still takes jobs. Inputs in, what to do out; the queue resumes the workers it is told to.
///
/// A job goes straight to a waiting worker when there is one (the one that waited last: its memory is the likeliest to
/// be warm), else into the queue. Once finished, the queue takes no job, the waiting workers are let go, and the
/// others run what is queued before they end.
struct WorkQueueState<Job, Worker> {
    let capacity: Int
    private var jobs = CircularBuffer<Job>()
    private var waiting: [Worker] = []
    private(set) var isFinished = false

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The jobs queued and not yet taken.
    var queued: Int { jobs.count }

    enum Submitted {
        /// Resume this worker with the job.
        case handOver(Worker)
        case queued
        /// The queue is full or finished: the job will not run.
        case refused
    }

    mutating func submit(_ job: Job) -> Submitted {
        if isFinished { return .refused }
        if let worker = waiting.popLast() { return .handOver(worker) }
        guard jobs.count < capacity else { return .refused }
        jobs.append(job)
        return .queued
    }

    enum Next {
        /// Resume the worker with this job.
        case run(Job)
        /// Resume the worker with nothing: it ends.
        case stop
        /// The worker waits; a later ``submit(_:)`` or ``finish()`` resumes it.
        case wait
    }

    /// A worker asks for its next job.
    mutating func next(_ worker: Worker) -> Next {
        if let job = jobs.popFirst() { return .run(job) }
        if isFinished { return .stop }
        waiting.append(worker)
        return .wait
    }

    /// Takes no job any more; returns the waiting workers, to be resumed with nothing.
    mutating func finish() -> [Worker] {
        isFinished = true
        defer { waiting = [] }
        return waiting
    }
}
