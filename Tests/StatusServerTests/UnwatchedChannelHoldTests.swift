import Testing

@testable import StatusServer

/// A channel nobody on the node needs is unsubscribed only once two housekeeping passes in a row found it unwatched: a
/// device back between them finds its channels still confirmed. While connects run late, up to
/// ``UnwatchedChannelHold/latePasses`` passes.
@Suite struct UnwatchedChannelHoldTests {
    @Test func aChannelIsDroppedAtTheSecondPassThatFindsItUnwatched() {
        var hold = UnwatchedChannelHold()
        #expect(!hold.isHolding)
        #expect(hold.pass(unwatched: ["a", "b"], connectsLate: false) == [])
        #expect(Set(hold.held.keys) == ["a", "b"])
        #expect(hold.isHolding)
        // Still unwatched: dropped now; a newly unwatched one is held in its turn.
        #expect(!hold.keeps("a", connectsLate: false))
        #expect(hold.keeps("c", connectsLate: false))
        #expect(hold.pass(unwatched: ["a", "b", "c"], connectsLate: false) == ["a", "b"])
        #expect(Set(hold.held.keys) == ["c"])
        #expect(hold.pass(unwatched: ["c"], connectsLate: false) == ["c"])
        #expect(!hold.isHolding)
    }

    @Test func aChannelWatchedAgainBetweenPassesIsKeptAndHeldAnewWhenItIsUnwatchedLater() {
        var hold = UnwatchedChannelHold()
        #expect(hold.pass(unwatched: ["a", "b"], connectsLate: false) == [])
        // "a"'s device came back before the next pass: only "b" goes.
        #expect(hold.pass(unwatched: ["b"], connectsLate: false) == ["b"])
        #expect(!hold.isHolding)
        // "a" unwatched again later: held one pass first, not dropped at once.
        #expect(hold.pass(unwatched: ["a"], connectsLate: false) == [])
        #expect(hold.pass(unwatched: ["a"], connectsLate: false) == ["a"])
    }

    @Test func aPassThatFindsEverythingWatchedReleasesTheHold() {
        var hold = UnwatchedChannelHold()
        #expect(hold.pass(unwatched: ["a"], connectsLate: false) == [])
        #expect(hold.pass(unwatched: [], connectsLate: false) == [])
        #expect(!hold.isHolding)
    }

    /// A node behind on its connects keeps a channel for as many passes as it stays behind, up to the bound; once it
    /// has caught up, the next pass drops what was held for long enough.
    @Test func whileConnectsRunLateAChannelIsHeldUpToTheBound() {
        var hold = UnwatchedChannelHold()
        for pass in 1..<UnwatchedChannelHold.latePasses {
            #expect(hold.pass(unwatched: ["a"], connectsLate: true) == [], "pass \(pass)")
        }
        #expect(hold.pass(unwatched: ["a"], connectsLate: true) == [])
        #expect(hold.held["a"] == UnwatchedChannelHold.latePasses)
        // The bound: held no longer, however late the connects still are.
        #expect(!hold.keeps("a", connectsLate: true))
        #expect(hold.pass(unwatched: ["a"], connectsLate: true) == ["a"])
        #expect(!hold.isHolding)
    }

    @Test func aNodeThatCaughtUpDropsWhatItHeldWhileLate() {
        var hold = UnwatchedChannelHold()
        #expect(hold.pass(unwatched: ["a", "b"], connectsLate: true) == [])
        #expect(hold.pass(unwatched: ["a", "b", "c"], connectsLate: true) == [])
        // Caught up: what was unwatched at a pass before already goes; "d", unwatched since just now, is held its one
        // pass.
        #expect(hold.pass(unwatched: ["a", "b", "c", "d"], connectsLate: false) == ["a", "b", "c"])
        #expect(hold.pass(unwatched: ["d"], connectsLate: false) == ["d"])
    }
}
