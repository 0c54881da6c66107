import NIOCore
import Testing

@testable import RedisClient

/// What a subscription connection's pings prove (``SubscriptionPings``): the feed is whole up to the sending of the last
/// ping answered, and a ping still unanswered an interval later makes the connection silent.
@Suite struct SubscriptionPingsTests {
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test func anAnsweredPingMovesTheWholeMomentToItsSending() {
        var pings = SubscriptionPings(subscribedAt: start)
        #expect(pings.wholeUntil == start)
        #expect(pings.tick(at: start + .seconds(1)) == .ping)
        #expect(pings.wholeUntil == start, "a ping sent proves nothing until it is answered")
        pings.answered()
        #expect(pings.wholeUntil == start + .seconds(1))
        #expect(pings.tick(at: start + .seconds(2)) == .ping, "answered: the next interval pings again")
    }

    /// The moment a silent connection is noticed is not the moment it fell silent: the whole moment stays at the last
    /// ping answered.
    @Test func anUnansweredPingMakesTheConnectionSilentAndKeepsTheLastAnswer() {
        var pings = SubscriptionPings(subscribedAt: start)
        _ = pings.tick(at: start + .seconds(1))
        pings.answered()
        #expect(pings.tick(at: start + .seconds(2)) == .ping)
        #expect(pings.tick(at: start + .seconds(3)) == .silent)
        #expect(pings.wholeUntil == start + .seconds(1))
    }

    @Test func anAnswerWithNoPingOutChangesNothing() {
        var pings = SubscriptionPings(subscribedAt: start)
        pings.answered()
        #expect(pings.wholeUntil == start)
        #expect(pings.tick(at: start + .seconds(1)) == .ping)
    }
}
