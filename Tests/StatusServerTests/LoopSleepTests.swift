import NIOCore
import NIOPosix
import Testing

@testable import StatusServer

/// A group commit's linger: on an event loop, a timer of that loop, after which the task goes on there.
@Suite struct LoopSleepTests {
    @Test func onALoopTheWaitIsThatLoopsTimerAndTheTaskStaysThere() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        try await withTaskExecutorPreference(LoopAffineTaskExecutor(loops: [loop])) {
            #expect(loop.inEventLoop)
            let start = ContinuousClock.now
            await LoopSleep.wait(.milliseconds(5))
            #expect(ContinuousClock.now - start >= .milliseconds(5))
            #expect(loop.inEventLoop)
        }
        try await group.shutdownGracefully()
    }

    @Test func offALoopItIsAnOrdinarySleep() async {
        #expect(MultiThreadedEventLoopGroup.currentEventLoop == nil)
        let start = ContinuousClock.now
        await LoopSleep.wait(.milliseconds(5))
        #expect(ContinuousClock.now - start >= .milliseconds(5))
    }
}
