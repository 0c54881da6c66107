import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import StatusServer

/// The node's loop-affine executor: a task runs on the event loop that resumes it, and a task started or resumed from
/// elsewhere goes to one of the executor's loops, never to the global pool.
@Suite struct LoopAffineTaskExecutorTests {
    @Test func aTaskGoesOnRunningOnTheLoopThatResumedIt() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let executor = LoopAffineTaskExecutor(loops: loops)
        try await withTaskExecutorPreference(executor) {
            // Started from a thread of the test's pool: on one of the loops.
            #expect(loops.contains { $0.inEventLoop })
            for loop in loops + loops {
                // A future completed on `loop` resumes the task there. It is completed only once the task has
                // suspended: the loop the task runs on takes the job that completes it after the task's own job ends.
                // (A continuation resumed before its task suspended lets the task go on where it is, which says nothing
                // of the executor.)
                let current = try #require(MultiThreadedEventLoopGroup.currentEventLoop)
                let promise = loop.makePromise(of: Void.self)
                current.execute { loop.execute { promise.succeed() } }
                try await promise.futureResult.get()
                #expect(loop.inEventLoop)
                #expect(MultiThreadedEventLoopGroup.currentEventLoop === loop)
            }
        }
        try await group.shutdownGracefully()
    }

    @Test func jobsEnqueuedFromElsewhereTakeTheLoopsInTurn() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let executor = LoopAffineTaskExecutor(loops: loops)
        // Asked from a thread that is none of its loops.
        let first = executor.loopForNextJob
        let second = executor.loopForNextJob
        #expect(first !== second)
        #expect(loops.contains { $0 === first } && loops.contains { $0 === second })
        // Asked on a loop of its own: that loop.
        for loop in loops {
            let chosen = try await loop.submit { executor.loopForNextJob === loop }.get()
            #expect(chosen)
        }
        // A loop of another group is not one of its own: the next in turn.
        let other = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let elsewhere = try await other.next().submit { executor.loopForNextJob }.get()
        #expect(loops.contains { $0 === elsewhere })
        try await other.shutdownGracefully()
        try await group.shutdownGracefully()
    }
}
