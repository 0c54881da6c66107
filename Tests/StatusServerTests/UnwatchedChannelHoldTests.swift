import Testing

@testable import StatusServer

/// A channel nobody on the node needs is unsubscribed only once two housekeeping passes in a row found it unwatched: a
/// device back between them finds its channels still confirmed.
@Suite struct UnwatchedChannelHoldTests {
    @Test func aChannelIsDroppedAtTheSecondPassThatFindsItUnwatched() {
        var hold = UnwatchedChannelHold()
        #expect(!hold.isHolding)
        #expect(hold.pass(unwatched: ["a", "b"]) == [])
        #expect(hold.held == ["a", "b"])
        #expect(hold.isHolding)
        // Still unwatched: dropped now; a newly unwatched one is held in its turn.
        #expect(hold.pass(unwatched: ["a", "b", "c"]) == ["a", "b"])
        #expect(hold.held == ["c"])
        #expect(hold.pass(unwatched: ["c"]) == ["c"])
        #expect(!hold.isHolding)
    }

    @Test func aChannelWatchedAgainBetweenPassesIsKeptAndHeldAnewWhenItIsUnwatchedLater() {
        var hold = UnwatchedChannelHold()
        #expect(hold.pass(unwatched: ["a", "b"]) == [])
        // "a"'s device came back before the next pass: only "b" goes.
        #expect(hold.pass(unwatched: ["b"]) == ["b"])
        #expect(!hold.isHolding)
        // "a" unwatched again later: held one pass first, not dropped at once.
        #expect(hold.pass(unwatched: ["a"]) == [])
        #expect(hold.pass(unwatched: ["a"]) == ["a"])
    }

    @Test func aPassThatFindsEverythingWatchedReleasesTheHold() {
        var hold = UnwatchedChannelHold()
        #expect(hold.pass(unwatched: ["a"]) == [])
        #expect(hold.pass(unwatched: []) == [])
        #expect(!hold.isHolding)
    }
}
