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

/// When a group commit's leader lingers for company: only on a busy node, and what arrived meanwhile joins its batch.
@Suite struct GroupCommitLingerTests {
    @Test func aLeaderLingersOnlyWhenTheLastBatchEndedMomentsAgo() {
        let linger = GroupCommitLinger.churn
        #expect(!linger.lingers(sinceLastWrite: nil))
        #expect(linger.lingers(sinceLastWrite: .zero))
        #expect(linger.lingers(sinceLastWrite: .milliseconds(2)))
        #expect(!linger.lingers(sinceLastWrite: .microseconds(2001)))
        #expect(!linger.lingers(sinceLastWrite: .seconds(1)))
        #expect(!GroupCommitLinger.none.lingers(sinceLastWrite: .zero))
    }

    @Test func writesArrivingWhileTheLeaderLingersJoinItsBatchInOrderUpToTheRoomLeft() {
        var queue = GroupCommitQueue<Int>(maxBatch: 4)
        guard case .lead(let batch) = queue.arrive(0) else {
            Issue.record("a lone write must lead")
            return
        }
        for member in 1...5 {
            guard case .wait = queue.arrive(member) else {
                Issue.record("a write arriving while the leader lingers waits")
                return
            }
        }
        let joined = batch + queue.gather(upTo: queue.maxBatch - batch.count)
        #expect(joined == [0, 1, 2, 3])
        #expect(queue.waitingCount == 2)
        #expect(queue.gather(upTo: -1) == [])
        // The rest go as the next batch, and the queue is idle after it.
        #expect(queue.finished() == [4, 5])
        #expect(queue.finished() == nil)
        #expect(queue.isIdle)
    }
}
