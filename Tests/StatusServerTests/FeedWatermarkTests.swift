import Testing

@testable import StatusServer

/// From when a resynchronisation reads the apps' logs of recent changes (``FeedWatermark``): the last moment the feed
/// was known whole, held at a lost connection until a resynchronisation begun after the loss succeeds.
@Suite struct FeedWatermarkTests {
    @Test func aGapAfterBatchesLooksBackToTheLastWholeBatch() {
        var mark = FeedWatermark(nowMs: 1_000)
        mark.heard(atMs: 2_000)
        mark.heard(atMs: 1_500)
        #expect(mark.beginResync(atMs: 5_000).sinceMs == 2_000, "a batch taken late does not move it back")
    }

    /// On a cluster the other shards' connections deliver batches while one is lost: those say nothing of the lost
    /// one's channels, so the resynchronisation still looks back to before the loss.
    @Test func batchesAfterALossDoNotMoveItPastTheLoss() {
        var mark = FeedWatermark(nowMs: 1_000)
        mark.heard(atMs: 2_000)
        mark.lost(wholeUntilMs: 2_000)
        mark.heard(atMs: 3_000)
        mark.heard(atMs: 4_000)
        mark.lost(wholeUntilMs: 4_000)
        #expect(mark.beginResync(atMs: 5_000).sinceMs == 2_000)
    }

    /// A silent connection is noticed a ping interval or two after it fell silent, while the other shards' batches
    /// went on: the loss looks back to the connection's last answered ping, not to the batch before it was noticed.
    @Test func aSilentConnectionLooksBackToItsLastAnsweredPing() {
        var mark = FeedWatermark(nowMs: 1_000)
        mark.heard(atMs: 2_000)
        mark.heard(atMs: 3_500)
        mark.lost(wholeUntilMs: 1_800)
        #expect(mark.beginResync(atMs: 5_000).sinceMs == 1_800)
    }

    @Test func aResynchronisationThatSucceededRepairsTheLossesBeforeIt() {
        var mark = FeedWatermark(nowMs: 1_000)
        mark.lost(wholeUntilMs: 1_000)
        let resync = mark.beginResync(atMs: 5_000)
        #expect(resync.sinceMs == 1_000)
        mark.resynchronised(resync)
        #expect(mark.lostSinceMs == nil)
        #expect(mark.beginResync(atMs: 6_000).sinceMs == 5_000, "everything before the resynchronisation began was read")
    }

    /// A loss noted while a resynchronisation reads is not repaired by it: the next one still looks back to it.
    @Test func aLossDuringAResynchronisationOutlivesIt() {
        var mark = FeedWatermark(nowMs: 1_000)
        mark.lost(wholeUntilMs: 1_000)
        let resync = mark.beginResync(atMs: 5_000)
        mark.heard(atMs: 5_500)
        mark.lost(wholeUntilMs: 5_500)
        mark.resynchronised(resync)
        #expect(mark.lostSinceMs == 1_000)
        #expect(mark.beginResync(atMs: 7_000).sinceMs == 1_000)
    }

    @Test func aFailedResynchronisationChangesNothing() {
        var mark = FeedWatermark(nowMs: 1_000)
        mark.heard(atMs: 2_000)
        mark.lost(wholeUntilMs: 2_000)
        _ = mark.beginResync(atMs: 5_000)
        #expect(mark.beginResync(atMs: 5_250).sinceMs == 2_000)
    }
}
