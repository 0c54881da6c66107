import Testing

@testable import StatusServer

/// The bookkeeping of a loop's mailbox (``LoopMailbox``): batches posted while a drain is scheduled join it, a drain takes
/// a turn's worth in order, and the deliveries waiting are bounded by making the poster wait.
@Suite struct LoopMailboxStateTests {
    private static func mailbox(turn: Int = 10, high: Int = 100, low: Int = 20) -> LoopMailboxState<String> {
        LoopMailboxState(turnLimit: turn, highWater: high, lowWater: low)
    }

    @Test func onlyTheFirstPostSchedulesADrainAndLaterOnesJoinIt() {
        var box = Self.mailbox()
        #expect(box.post([("a", 3)]) == .init(schedule: true, full: false))
        #expect(box.post([("b", 3)]) == .init(schedule: false, full: false))
        #expect(box.post([("c", 2), ("d", 1)]) == .init(schedule: false, full: false))
        let taken = box.take()
        #expect(taken.items == ["a", "b", "c", "d"])
        #expect(!taken.more)
        #expect(!box.isScheduled)
        // Emptied: the next post schedules again.
        #expect(box.post([("e", 1)]).schedule)
    }

    @Test func aDrainTakesOneTurnInOrderAndTheRestWaitsForTheNext() {
        var box = Self.mailbox(turn: 10)
        _ = box.post([("a", 4), ("b", 4), ("c", 4), ("d", 4)])
        let first = box.take()
        #expect(first.items == ["a", "b"])
        #expect(first.more)
        // Still scheduled (the drain schedules the next): a post meanwhile schedules nothing.
        #expect(!box.post([("e", 1)]).schedule)
        let second = box.take()
        #expect(second.items == ["c", "d", "e"])
        #expect(!second.more)
        #expect(box.waiting == 0)
    }

    @Test func anItemLargerThanATurnIsTakenAlone() {
        var box = Self.mailbox(turn: 10)
        _ = box.post([("big", 25), ("small", 1)])
        #expect(box.take().items == ["big"])
        #expect(box.take().items == ["small"])
    }

    @Test func pastTheHighWaterThePosterWaitsUntilADrainBringsItUnderTheLow() {
        var box = Self.mailbox(turn: 40, high: 100, low: 20)
        #expect(!box.post([("a", 40), ("b", 40)]).full)
        #expect(box.post([("c", 40)]).full)
        #expect(!box.isBelowLowWater)
        #expect(!box.take().belowLowWater)  // 120 → 80 waiting: not under 20 yet
        #expect(box.waiting == 80)
        let last = box.take()
        #expect(last.items == ["b"])
        #expect(!last.belowLowWater)
        let empty = box.take()
        #expect(empty.items == ["c"])
        #expect(empty.belowLowWater)
        #expect(box.isBelowLowWater)
    }
}
