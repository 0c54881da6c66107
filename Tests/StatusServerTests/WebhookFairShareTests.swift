import Testing

@testable import StatusServer

/// The turns of ``WebhookFairShare``, without I/O.
struct WebhookFairShareTests {
    let now = ContinuousClock.now

    @Test func eachAppGetsAtMostItsShareAndTheRestIsLeftFree() {
        var share = WebhookFairShare(total: 10, perApp: 4)
        let plan = share.plan(apps: ["noisy"], now: now)
        #expect(plan.map(\.appId) == ["noisy"])
        #expect(plan.map(\.count) == [4])
        share.started("noisy", count: 4)
        #expect(share.plan(apps: ["noisy"], now: now).isEmpty, "the noisy app holds its share")
        let next = share.plan(apps: ["noisy", "quiet"], now: now)
        #expect(next.map(\.appId) == ["quiet"])
        #expect(next.map(\.count) == [4])
        #expect(share.free == 6)
    }

    @Test func turnsGoRoundFromAfterTheAppServedLast() {
        var share = WebhookFairShare(total: 2, perApp: 1)
        #expect(share.plan(apps: ["c", "a", "b"], now: now).map(\.appId) == ["a", "b"])
        share.started("a", count: 1)
        share.started("b", count: 1)
        share.finished("a")
        share.finished("b")
        #expect(share.plan(apps: ["a", "b", "c"], now: now).map(\.appId) == ["c", "a"], "c waited longest")
        share.started("c", count: 1)
        share.finished("c")
        #expect(share.plan(apps: ["a", "b", "c"], now: now).map(\.appId) == ["a", "b"])
    }

    @Test func anAppWithNothingDueRestsUntilItMayHaveSome() {
        var share = WebhookFairShare(total: 8, perApp: 2)
        share.started("retrying", count: 0)
        share.rest("retrying", until: now + .milliseconds(500), mark: share.mark("retrying"))
        #expect(share.plan(apps: ["retrying", "other"], now: now).map(\.appId) == ["other"])
        #expect(share.plan(apps: ["retrying"], now: now + .milliseconds(500)).map(\.appId) == ["retrying"])
        share.rest("retrying", until: now + .seconds(10), mark: share.mark("retrying"))
        share.started("retrying", count: 1)
        share.finished("retrying")
        #expect(share.plan(apps: ["retrying"], now: now).map(\.appId) == ["retrying"], "a finished delivery may leave a retry due")
    }

    @Test func aTakeThatOverlappedAFinishedDeliveryDoesNotRest() {
        var share = WebhookFairShare(total: 8, perApp: 2)
        share.started("app", count: 1)
        let mark = share.mark("app")
        // The take ran while the delivery was still leased, and the delivery finished before its answer came back.
        share.finished("app")
        share.rest("app", until: now + .seconds(10), mark: mark)
        #expect(share.plan(apps: ["app"], now: now).map(\.appId) == ["app"])
    }

    @Test func slotsComeBackWhenDeliveriesFinish() {
        var share = WebhookFairShare(total: 3, perApp: 3)
        share.started("a", count: 3)
        #expect(share.free == 0)
        #expect(share.plan(apps: ["a", "b"], now: now).isEmpty)
        share.finished("a")
        #expect(share.free == 1)
        #expect(share.inFlight["a"] == 2)
        #expect(share.plan(apps: ["a", "b"], now: now).map(\.appId) == ["b"])
        share.finished("a")
        share.finished("a")
        #expect(share.inFlight["a"] == nil)
        #expect(share.busy == 0)
    }
}
