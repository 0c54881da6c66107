import Testing

@testable import StatusServer

/// The group commit's decisions: a lone write goes at once; writes arriving meanwhile wait and go together as the next
/// batch, led by the first of them, at most `maxBatch` at a time, in arrival order; the queue is idle once drained.
@Suite struct GroupCommitQueueTests {
    @Test func aLoneWriteLeadsAtOnce() {
        var queue = GroupCommitQueue<Int>(maxBatch: 4)
        guard case .lead(let batch) = queue.arrive(1) else {
            Issue.record("a lone write must lead")
            return
        }
        #expect(batch == [1])
        #expect(queue.inFlight)
        #expect(queue.finished() == nil)
        #expect(queue.isIdle)
        // And again afterwards.
        guard case .lead = queue.arrive(2) else {
            Issue.record("an idle queue lets the next write lead")
            return
        }
    }

    @Test func writesArrivingMeanwhileGoTogetherInOrderAndInBatchesOfAtMostMaxBatch() {
        var queue = GroupCommitQueue<Int>(maxBatch: 3)
        _ = queue.arrive(0)
        for member in 1...7 {
            guard case .wait = queue.arrive(member) else {
                Issue.record("a write arriving while one is in flight waits")
                return
            }
        }
        #expect(queue.waitingCount == 7)
        #expect(queue.finished() == [1, 2, 3])
        #expect(queue.inFlight)
        // One arriving now joins the end of the line.
        guard case .wait = queue.arrive(8) else {
            Issue.record("still in flight")
            return
        }
        #expect(queue.finished() == [4, 5, 6])
        #expect(queue.finished() == [7, 8])
        #expect(!queue.isIdle)
        #expect(queue.finished() == nil)
        #expect(queue.isIdle)
    }
}
