import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import StatusServer

/// The work queue with real tasks: its bound on jobs running at once, its capacity, and its end.
@Suite struct DeviceWorkQueueTests {
    /// What the jobs of a test saw.
    private final class Tally: Sendable {
        let running = Atomic(0)
        let mostAtOnce = Atomic(0)
        let done = Atomic(0)

        func job() async {
            let now = running.wrappingAdd(1, ordering: .relaxed).newValue
            var seen = mostAtOnce.load(ordering: .relaxed)
            while now > seen {
                let (exchanged, original) = mostAtOnce.compareExchange(expected: seen, desired: now, ordering: .relaxed)
                if exchanged { break }
                seen = original
            }
            try? await Task.sleep(for: .milliseconds(20))
            running.wrappingSubtract(1, ordering: .relaxed)
            done.wrappingAdd(1, ordering: .relaxed)
        }
    }

    @Test func noMoreJobsRunAtOnceThanItsConcurrency() async throws {
        let queue = DeviceWorkQueue(capacity: 100, concurrency: 2)
        let tally = Tally()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await queue.run() }
            for _ in 0..<10 { #expect(queue.submit { await tally.job() }) }
            for _ in 0..<500 where tally.done.load(ordering: .relaxed) < 10 { try await Task.sleep(for: .milliseconds(10)) }
            group.cancelAll()
        }
        #expect(tally.done.load(ordering: .relaxed) == 10)
        #expect(tally.mostAtOnce.load(ordering: .relaxed) == 2)
    }

    @Test func aFullQueueRefusesAndWhatWasQueuedBeforeTheEndStillRuns() async {
        let queue = DeviceWorkQueue(capacity: 3, concurrency: 1)
        let tally = Tally()
        // No worker has started yet: the jobs wait in the queue, up to its capacity.
        for _ in 0..<3 { #expect(queue.submit { await tally.job() }) }
        #expect(!queue.submit { await tally.job() })
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await queue.run() }
            // Ended at once: the queue takes nothing more, and its worker runs the three queued jobs before it ends.
            group.cancelAll()
        }
        #expect(tally.done.load(ordering: .relaxed) == 3)
        #expect(!queue.submit { await tally.job() })
    }

    /// With the node's loop-affine executor, a job handed to a free worker runs on the event loop that submitted it
    /// (a socket's): its Redis commands and their replies then stay on that thread.
    /// Either given to the queue, or preferred by the task that runs it (the binary's `withNodeTaskExecutor`).
    @Test(arguments: [true, false]) func aJobRunsOnTheLoopThatSubmittedIt(executorGiven: Bool) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let executor = LoopAffineTaskExecutor(loops: loops)
        let queue = DeviceWorkQueue(capacity: 100, concurrency: 4, placement: executorGiven ? .executor(executor) : .inherited)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                if executorGiven {
                    await queue.run()
                } else {
                    await withTaskExecutorPreference(executor) { await queue.run() }
                }
            }
            // Once the workers wait for jobs (a job run shows they started), each job goes to one of them at once.
            let started = loops[0].makePromise(of: Void.self)
            #expect(queue.submit { started.succeed() })
            try await started.futureResult.get()
            for round in 0..<20 {
                let loop = loops[round % loops.count]
                let ran = loop.makePromise(of: [Bool].self)
                let submitted = try await loop.submit {
                    queue.submit {
                        let before = loop.inEventLoop
                        // Resumed by the same loop after a suspension: still there.
                        try? await loop.scheduleTask(in: .milliseconds(1)) {}.futureResult.get()
                        ran.succeed([before, loop.inEventLoop])
                    }
                }.get()
                #expect(submitted)
                #expect(try await ran.futureResult.get() == [true, true], "round \(round)")
            }
            tasks.cancelAll()
        }
        try await group.shutdownGracefully()
    }
}
