import NIOCore
import NIOPosix
import Testing

@testable import StatusServer

/// The connects' executor: jobs handed over on a loop stay there up to its share, the rest go to the global pool.
@Suite struct SpillingLoopTaskExecutorTests {
    @Test func aJobStaysOnItsLoopWhileFewerThanTheShareWaitThere() {
        #expect(SpillingLoopTaskExecutor.placement(loopIndex: 1, waiting: 0, share: 4) == .loop(1))
        #expect(SpillingLoopTaskExecutor.placement(loopIndex: 1, waiting: 3, share: 4) == .loop(1))
        #expect(SpillingLoopTaskExecutor.placement(loopIndex: 1, waiting: 4, share: 4) == .globalPool)
        #expect(SpillingLoopTaskExecutor.placement(loopIndex: 0, waiting: 9, share: 4) == .globalPool)
        // Handed over on a thread that is none of its loops.
        #expect(SpillingLoopTaskExecutor.placement(loopIndex: nil, waiting: 0, share: 4) == .globalPool)
    }

    /// Tasks started in one turn of a loop: the first `share` wait on that loop and run there, the others on the pool;
    /// once they ran, the loop takes its share again.
    @Test func tasksStartedInOneTurnOfALoopTakeItsShareAndTheRestGoToThePool() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let executor = SpillingLoopTaskExecutor(loops: loops, share: 3)
        for loop in loops + loops {
            let started = try await loop.submit {
                // Unstructured because a loop's thread has no task to add children to; each is awaited below.
                (0..<5).map { _ in Task(executorPreference: executor) { loop.inEventLoop } }
            }.get()
            var onTheLoop: [Bool] = []
            for task in started { onTheLoop.append(await task.value) }
            #expect(onTheLoop == [true, true, true, false, false])
        }
        // Started from elsewhere: the pool.
        let elsewhere = await Task(executorPreference: executor) { loops.contains { $0.inEventLoop } }.value
        #expect(!elsewhere)
        #expect(executor.placementForNextJob == .globalPool)
        try await group.shutdownGracefully()
    }

    /// Outside the binary (no node executor) the connects' queue runs on the global pool; under it, on its loops' share.
    @Test func theConnectsQueueTakesTheLoopsOnlyInANodeRunUnderTheNodeExecutor() async throws {
        let queue = DeviceWorkQueue(capacity: 10, concurrency: 1, placement: .loopsUpTo(share: 2))
        #expect(queue.executor as? SpillingLoopTaskExecutor == nil)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let node = LoopAffineTaskExecutor(group: group)
        let spilling = LoopAffineTaskExecutor.$node.withValue(node) { queue.executor as? SpillingLoopTaskExecutor }
        #expect(spilling?.share == 2)
        #expect(spilling?.loops.count == 1 && spilling?.loops.first === group.next())
        try await group.shutdownGracefully()
    }
}
