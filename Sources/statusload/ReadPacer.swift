import Foundation
import NIOCore
import Synchronization

/// Batches the devices' reads: each event loop sleeps `pause` between two passes over its ready sockets, so one wake-up
/// serves every event that arrived meanwhile instead of one or two. Waking a thread costs more than counting a delivery
/// (tens of thousands of wake-ups a second otherwise, most of the loader's CPU), at the price of up to `pause` of extra
/// latency on what the devices measure.
final class ReadPacer: Sendable {
    private let pauseMicros: UInt32
    private let stopped = Atomic<Bool>(false)

    init(pauseMilliseconds: Double) {
        pauseMicros = UInt32(max(pauseMilliseconds, 0) * 1000)
    }

    func start(on loops: [any EventLoop]) {
        guard pauseMicros > 0 else { return }
        for loop in loops { schedule(on: loop) }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// The pause runs as a task scheduled a little in the future, so the loop polls its sockets between two pauses
    /// (an immediate task would run again before the loop polls).
    private func schedule(on loop: any EventLoop) {
        loop.scheduleTask(in: .microseconds(50)) {
            guard !self.stopped.load(ordering: .relaxed) else { return }
            usleep(self.pauseMicros)
            self.schedule(on: loop)
        }
    }
}
