import NIOCore
import NIOPosix

/// A short wait that is not cancelled, for a task that may be running on an event loop.
///
/// On an event loop (``LoopAffineTaskExecutor``) the wait is a timer of that loop: the loop wakes from `epoll_wait`
/// when it is due and resumes the task itself. `Task.sleep` would instead register a timer with the concurrency
/// runtime's timer thread, which wakes to fire it and hands the task back to the loop: two threads woken for one wait.
/// A group commit's leader lingers this way, up to hundreds of times a second under churn (``GroupCommit``).
enum LoopSleep {
    /// Waits `duration`, on the current event loop's timer when there is one; returns early only when not on a loop
    /// and the task is cancelled.
    static func wait(_ duration: Duration) async {
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop else {
            try? await Task.sleep(for: duration)
            return
        }
        try? await loop.scheduleTask(in: TimeAmount(duration)) {}.futureResult.get()
    }
}
