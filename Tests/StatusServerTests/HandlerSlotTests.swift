import Testing

@testable import StatusServer

/// A session's handler slot: made once on first use, never made again once released.
@Suite struct HandlerSlotTests {
    private final class Handler {}

    @Test func theHandlerIsMadeOnFirstUseAndOnlyThen() {
        var slot = HandlerSlot<Handler>.notMade
        var made = 0
        let first = slot.handler {
            made += 1
            return Handler()
        }
        let second = slot.handler {
            made += 1
            return Handler()
        }
        #expect(made == 1)
        #expect(first != nil && first === second)
    }

    @Test func aReleasedSlotIsNeverMadeAgain() {
        var slot = HandlerSlot<Handler>.notMade
        _ = slot.handler { Handler() }
        slot.release()
        var asked = false
        let late = slot.handler {
            asked = true
            return Handler()
        }
        #expect(late == nil)
        #expect(!asked)
        // Released before anything made it: the same.
        var unused = HandlerSlot<Handler>.notMade
        unused.release()
        #expect(unused.handler { Handler() } == nil)
    }

    @Test func aSessionWithoutASocketHasNoHandlerUntilOneCanBeMade() {
        var slot = HandlerSlot<Handler>.notMade
        #expect(slot.handler { nil } == nil)
        let handler = Handler()
        #expect(slot.handler { handler } === handler)
    }
}
