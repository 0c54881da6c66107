import Testing

@testable import StatusServer

/// The work queue's state as a pure value: workers as plain names, jobs as numbers.
@Suite struct WorkQueueStateTests {
    private typealias State = WorkQueueState<Int, String>

    @Test func aJobGoesToTheWorkerThatWaitedLastElseIntoTheQueueUpToItsCapacity() {
        var state = State(capacity: 2)
        guard case .wait = state.next("first"), case .wait = state.next("second") else {
            Issue.record("an empty queue makes its workers wait")
            return
        }
        guard case .handOver("second") = state.submit(1), case .handOver("first") = state.submit(2) else {
            Issue.record("jobs go to the waiting workers, the last one first")
            return
        }
        guard case .queued = state.submit(3), case .queued = state.submit(4), case .refused = state.submit(5) else {
            Issue.record("with nobody waiting, jobs are queued up to the capacity, and refused past it")
            return
        }
        #expect(state.queued == 2)
        guard case .run(3) = state.next("first"), case .run(4) = state.next("second"), case .wait = state.next("first") else {
            Issue.record("workers take the queued jobs in order, then wait")
            return
        }
    }

    @Test func aFinishedQueueTakesNothingLetsItsWaitingWorkersGoAndHasTheQueuedJobsRun() {
        var state = State(capacity: 4)
        _ = state.next("idle")
        var busy = State(capacity: 4)
        _ = busy.submit(7)
        #expect(state.finish() == ["idle"])
        guard case .refused = state.submit(1) else {
            Issue.record("a finished queue refuses jobs")
            return
        }
        guard case .stop = state.next("idle") else {
            Issue.record("a worker of a finished, empty queue ends")
            return
        }
        #expect(busy.finish().isEmpty)
        guard case .run(7) = busy.next("worker"), case .stop = busy.next("worker") else {
            Issue.record("a job queued before the finish still runs, then the worker ends")
            return
        }
    }
}
