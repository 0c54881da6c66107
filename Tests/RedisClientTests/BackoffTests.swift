import NIOCore
import RedisClient
import Testing

/// The reconnect schedule every Redis connection follows.
@Suite struct BackoffTests {
    @Test func theDelayDoublesFrom50MsTo2Seconds() {
        var backoff = Backoff()
        let delays = (0..<9).map { _ in backoff.nextDelay().nanoseconds / 1_000_000 }
        #expect(delays == [50, 100, 200, 400, 800, 1600, 2000, 2000, 2000])
    }

    @Test func aSuccessStartsTheScheduleAgain() {
        var backoff = Backoff()
        for _ in 0..<5 { _ = backoff.nextDelay() }
        backoff.reset()
        #expect(backoff.nextDelay() == .milliseconds(50))
        #expect(backoff.nextDelay() == .milliseconds(100))
    }

    @Test func aCustomScheduleKeepsItsBounds() {
        var backoff = Backoff(initial: .milliseconds(300), maximum: .milliseconds(500))
        #expect([backoff.nextDelay(), backoff.nextDelay(), backoff.nextDelay()] == [.milliseconds(300), .milliseconds(500), .milliseconds(500)])
        #expect(backoff.next == .milliseconds(500))
    }
}
