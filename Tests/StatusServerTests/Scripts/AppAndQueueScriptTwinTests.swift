import RedisClient
import Testing

@testable import StatusServer

/// The twins of the scripts of apps, their deletion, the webhook queues and the due-time indexes.
@Suite struct AppAndQueueScriptTwinTests {
    @Test func appCreateAndConfigUpdate() throws {
        #expect(try AppCreate.Reply(Canned.int(1)) == .created)
        #expect(try AppCreate.Reply(Canned.int(0)) == .exists)
        #expect(try AppCreate.Reply(Canned.int(-1)) == .beingDeleted)
        expectMalformed("app_create.lua") { _ = try AppCreate.Reply(Canned.int(2)) }
        expectMalformed("app_create.lua") { _ = try AppCreate.Reply(Canned.array([Canned.int(1)])) }
        #expect(try AppConfigUpdate.Reply(Canned.int(1)) == .written)
        #expect(try AppConfigUpdate.Reply(Canned.int(0)) == .changedMeanwhile)
        #expect(try AppConfigUpdate.Reply(Canned.int(-1)) == .noSuchApp)
        expectMalformed("app_config_update.lua") { _ = try AppConfigUpdate.Reply(.null) }
    }

    @Test func appDeletion() throws {
        #expect(try AppDeleteMark.Reply(Canned.array([Canned.int(1), Canned.text("digest")])) == .marked(apiKeyDigest: "digest"))
        #expect(try AppDeleteMark.Reply(Canned.array([Canned.int(2), Canned.text("")])) == .underWay(apiKeyDigest: ""))
        #expect(try AppDeleteMark.Reply(Canned.array([Canned.int(0)])) == .noSuchApp)
        expectMalformed("app_delete_mark.lua") { _ = try AppDeleteMark.Reply(Canned.array([Canned.int(1)])) }
        expectMalformed("app_delete_mark.lua") { _ = try AppDeleteMark.Reply(Canned.array([Canned.int(0), Canned.text("x")])) }
        #expect(
            try AppDeleteClaim.Reply(Canned.array([Canned.int(1), Canned.text("d"), Canned.int(1500)])) == .claimed(apiKeyDigest: "d", ageMs: 1500)
        )
        #expect(try AppDeleteClaim.Reply(Canned.array([Canned.int(0)])) == .busy)
        #expect(try AppDeleteClaim.Reply(Canned.array([Canned.int(-1)])) == .gone)
        expectMalformed("app_delete_claim.lua") { _ = try AppDeleteClaim.Reply(Canned.array([Canned.int(1), Canned.text("d")])) }
        expectMalformed("app_delete_claim.lua") { _ = try AppDeleteClaim.Reply(Canned.int(1)) }
        #expect(try AppDeleteFinish.Reply(Canned.int(1)).value)
        #expect(DeletionClaimArguments(owner: "o", leaseMs: 30_000).strings == ["o", "30000"])
    }

    @Test func webhookQueue() throws {
        #expect(try WebhookEnqueue.Reply(Canned.array([Canned.int(2), Canned.int(1)])) == .init(dropped: 2, first: true))
        expectMalformed("webhook_enqueue.lua") { _ = try WebhookEnqueue.Reply(Canned.array([Canned.int(2)])) }
        let take = try WebhookTakeScript.Reply(
            Canned.array([Canned.int(3), Canned.int(250), Canned.text("1-0"), Canned.text("{}"), Canned.text("g"), Canned.text("2")])
        )
        #expect(take.left == 3)
        #expect(take.nextDueMs == 250)
        #expect(take.events == [.init(id: "1-0", body: "{}", generation: "g", attempts: 2)])
        let jobs = WebhookTake(take, appId: "app")
        #expect(jobs.jobs == [WebhookJob(appId: "app", eventId: "1-0", body: "{}", generation: "g", attempt: 2)])
        #expect(jobs.nextDue == .milliseconds(250))
        let empty = try WebhookTakeScript.Reply(Canned.array([Canned.int(0), Canned.int(-1)]))
        #expect(empty.nextDueMs == nil)
        #expect(WebhookTake(empty, appId: "app").nextDue == nil)
        expectMalformed("webhook_take.lua") { _ = try WebhookTakeScript.Reply(Canned.array([Canned.int(1), Canned.int(0), Canned.text("1-0")])) }
        expectMalformed("webhook_take.lua") { _ = try WebhookTakeScript.Reply(Canned.array([Canned.int(1)])) }
        #expect(try WebhookRetry.Reply(Canned.int(0)).value == false)
        #expect(try WebhookIndexRemove.Reply(Canned.int(1)).value)
        #expect(try WebhookIndexAdd.Reply(Canned.int(12)).value == 12)
        _ = try WebhookSettle.Reply(Canned.int(1))
        let keys = RedisKeys(appId: "app")
        #expect(WebhookQueueKeys(app: keys).strings == [keys.webhookStream, keys.webhookDue, keys.webhookAttempts])
    }

    @Test func dueIndexes() throws {
        let taken = try DueTake.Reply(
            Canned.array([Canned.int(5100), Canned.text("u1"), Canned.text("100"), Canned.text("u2"), Canned.text("200")])
        )
        #expect(taken.leaseScore == 5100)
        #expect(taken.entries.map(\.userId) == ["u1", "u2"])
        #expect(taken.entries.map(\.dueAt) == ["100", "200"])
        #expect(try DueTake.Reply(Canned.array([Canned.int(5100)])).entries.isEmpty)
        expectMalformed("due_take.lua") { _ = try DueTake.Reply(Canned.array([])) }
        expectMalformed("due_take.lua") { _ = try DueTake.Reply(Canned.array([Canned.int(5100), Canned.text("u1")])) }
        expectMalformed("due_take.lua") { _ = try DueTake.Reply(Canned.array([Canned.text("u1"), Canned.text("100"), Canned.text("u2")])) }
        #expect(try DueDone.Reply(Canned.int(2)).value == 2)
        // A handled entry goes (''); one whose moment has not come goes back at it.
        #expect(DueDone.Arguments(leaseScore: 9, entries: [("u", nil), ("v", 1234)]).strings == ["9", "u", "", "v", "1234"])
        let keys = RedisKeys(appId: "app")
        #expect(DueIndexKeys(index: keys.expiries, leases: keys.expiryLeases).strings == ["st:{app}:expiries", "st:{app}:expiries:leased"])
    }

    /// The apps with a due-time index: taken with their generations, settled with the earliest remaining entry (or
    /// none), marked by writers; both keys in one slot.
    @Test func dueApps() throws {
        let taken = try DueAppsTake.Reply(Canned.array([Canned.text("a1"), Canned.text("3"), Canned.text("a2"), Canned.text("0")]))
        #expect(taken.apps.map(\.appId) == ["a1", "a2"])
        #expect(taken.apps.map(\.generation) == ["3", "0"])
        #expect(try DueAppsTake.Reply(Canned.array([])).apps.isEmpty)
        expectMalformed("due_apps_take.lua") { _ = try DueAppsTake.Reply(Canned.array([Canned.text("a1")])) }
        #expect(DueAppsTake.Arguments(nowMs: 10, claimMs: 5000, limit: 7).strings == ["10", "5000", "7"])
        #expect(DueAppSettle.Arguments(appId: "a1", generation: "3", next: nil).strings == ["a1", "3", ""])
        #expect(DueAppSettle.Arguments(appId: "a1", generation: "3", next: 1234).strings == ["a1", "3", "1234"])
        #expect(DueAppMark.Arguments(appId: "a1", dueAt: 99).strings == ["a1", "99"])
        #expect(try DueAppMark.Reply(Canned.int(4)).value == 4)
        #expect(DueAppsKeys(RedisKeys.expiringApps).strings == ["st:{:due}:apps:expiring", "st:{:due}:apps:expiring:gen"])
        #expect(DueAppsKeys(RedisKeys.graceApps).strings == ["st:{:due}:apps:grace", "st:{:due}:apps:grace:gen"])
    }
}
