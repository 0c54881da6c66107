import Foundation
import NIOCore
import Synchronization

/// Batches the devices' reads: while a loop's sockets keep bringing data, the loop sleeps `pause` between two passes
/// over its ready sockets, so one wake-up serves every event that arrived meanwhile instead of one or two. Waking a
/// thread costs more than counting a delivery (tens of thousands of wake-ups a second otherwise, most of the loader's
/// CPU), at the price of up to `pause` of extra latency on what the devices measure. A loop that read nothing since
/// the last check only looks again 5 ms later, so an idle loader stays idle.
final class ReadPacer: Sendable {
    private let pauseMicros: UInt32
    private let stopped = Atomic<Bool>(false)

    init(pauseMilliseconds: Double) {
        pauseMicros = UInt32(max(pauseMilliseconds, 0) * 1000)
    }

    func start(on loops: [LoopStats]) {
        guard pauseMicros > 0 else { return }
        for stats in loops {
            stats.eventLoop.execute { self.check(stats, lastReads: stats.reads) }
        }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// Runs on the loop. The next check is a task scheduled a little in the future, so the loop polls its sockets in
    /// between (an immediate task would run again before the loop polls).
    private func check(_ stats: LoopStats, lastReads: Int) {
        guard !stopped.load(ordering: .relaxed) else { return }
        let reads = stats.reads
        if reads != lastReads {
            usleep(pauseMicros)
            stats.eventLoop.scheduleTask(in: .microseconds(50)) { self.check(stats, lastReads: reads) }
        } else {
            stats.eventLoop.scheduleTask(in: .milliseconds(5)) { self.check(stats, lastReads: reads) }
        }
    }
}
