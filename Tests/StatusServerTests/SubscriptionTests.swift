import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §4 subscribeUserStatus / unsubscribeUserStatus and the subscription listing.
@Suite(.redis) struct SubscriptionTests {
    @Test func gatingIsPlanThenSwitch() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            expectError(try await app.subscribe("alice", ["bob"]), 403, "PLAN_NOT_SUPPORTED")
            expectError(try await app.unsubscribe("alice", ["bob"]), 403, "PLAN_NOT_SUPPORTED")
            expectError(try await app.unsubscribe("alice", nil), 403, "PLAN_NOT_SUPPORTED")
            try await app.patchConfig(["statusQuery": true])
            expectError(try await app.subscribe("alice", ["bob"]), 403, "PLAN_NOT_SUPPORTED")
            try await app.patchConfig(["plan": "premium", "statusQuery": false])
            expectError(try await app.subscribe("alice", ["bob"]), 403, "FEATURE_DISABLED")
            expectError(try await app.unsubscribe("alice", ["bob"]), 403, "FEATURE_DISABLED")
            #expect(try await app.subscriptions("alice").isEmpty)
            try await app.patchConfig(["statusQuery": true])
            #expect(try await app.subscribe("alice", ["bob"]).status == 200)
        }
    }

    @Test func batchLimits() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob", "carol"])
            expectError(try await app.subscribe("alice", []), 400, "INVALID_REQUEST")
            expectError(try await app.call(.post, "/users/alice/subscriptions", [:]), 400, "INVALID_REQUEST")
            let hundred = (0..<100).map { "u\($0)" }
            let ok = try await app.subscribe("alice", hundred)
            #expect(ok.status == 200)
            #expect(ok.body["failures"].array.count == 100)
            expectError(try await app.subscribe("alice", hundred + ["bob"]), 400, "TOO_MANY_USERS")
            expectError(try await app.unsubscribe("alice", hundred + ["bob"]), 400, "TOO_MANY_USERS")
            // A patched limit, counted before duplicates are folded.
            try await app.patchConfig(["subscribeBatchLimit": 2])
            expectError(try await app.subscribe("alice", ["bob", "bob", "bob"]), 400, "TOO_MANY_USERS")
            expectError(try await app.unsubscribe("alice", ["bob", "carol", "bob"]), 400, "TOO_MANY_USERS")
            let two = try await app.subscribe("alice", ["bob", "bob"])
            #expect(two.status == 200)
            #expect(two.body["subscribed"].strings == ["bob"])
            #expect(try await app.subscriptions("alice") == ["bob"])
        }
    }

    @Test func perIdFailuresLetTheRestProceed() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob", "carol"])
            let response = try await app.subscribe("alice", ["bob", "alice", "ghost", "carol"])
            #expect(response.status == 200)
            #expect(response.body["subscribed"].strings == ["bob", "carol"])
            #expect(response.body["evicted"].strings.isEmpty)
            #expect(
                response.body["failures"] == [
                    ["userId": "alice", "code": "CANNOT_SUBSCRIBE_SELF"], ["userId": "ghost", "code": "USER_NOT_FOUND"],
                ]
            )
            #expect(try await app.subscriptions("alice") == ["bob", "carol"])
            // Only failures: accepted, nothing held.
            let onlySelf = try await app.subscribe("bob", ["bob"])
            #expect(onlySelf.status == 200)
            #expect(onlySelf.body["subscribed"].strings.isEmpty)
            #expect(onlySelf.body["failures"] == [["userId": "bob", "code": "CANNOT_SUBSCRIBE_SELF"]])
            #expect(try await app.subscriptions("bob").isEmpty)
        }
    }

    @Test func badIdFailsTheWholeCall() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            expectError(try await app.subscribe("alice", ["bob", "b@d id"]), 400, "INVALID_USER_ID")
            #expect(try await app.subscriptions("alice").isEmpty)
        }
    }

    @Test func orderIsOldestFirstAndResubscribingMovesToNewest() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "b", "c", "d", "e"])
            #expect(try await app.subscribe("alice", ["d", "b"]).status == 200)
            #expect(try await app.subscribe("alice", ["c"]).status == 200)
            #expect(try await app.subscriptions("alice") == ["d", "b", "c"])
            #expect(try await app.subscribe("alice", ["d"]).body["subscribed"].strings == ["d"])
            #expect(try await app.subscriptions("alice") == ["b", "c", "d"])
            #expect(try await app.subscribe("alice", ["e", "b"]).status == 200)
            #expect(try await app.subscriptions("alice") == ["c", "d", "e", "b"])
        }
    }

    @Test func pastTheLimitTheEarliestAreEvicted() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "subscriptionLimit": 3])
            let users = (1...9).map { "u\($0)" }
            try await app.createUsers(["alice"] + users)
            let first = try await app.subscribe("alice", ["u1", "u2", "u3"])
            #expect(first.body["evicted"].strings.isEmpty)
            let second = try await app.subscribe("alice", ["u4", "u5"])
            #expect(second.body["subscribed"].strings == ["u4", "u5"])
            #expect(second.body["evicted"].strings == ["u1", "u2"])
            #expect(try await app.subscriptions("alice") == ["u3", "u4", "u5"])
            // Resubscribing to one held moves it to newest, so it is not the one evicted.
            let third = try await app.subscribe("alice", ["u3", "u6"])
            #expect(third.body["evicted"].strings == ["u4"])
            #expect(try await app.subscriptions("alice") == ["u5", "u3", "u6"])
            // One call over the limit keeps its last ids.
            let fourth = try await app.subscribe("alice", ["u7", "u8", "u9", "u1"])
            #expect(Set(fourth.body["evicted"].strings) == ["u5", "u3", "u6", "u7"])
            #expect(try await app.subscriptions("alice") == ["u8", "u9", "u1"])
        }
    }

    @Test func defaultLimitIs200() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            let users = (0..<250).map { String(format: "u%03d", $0) }
            try await app.createUsers(["alice"] + users)
            #expect(try await app.subscribe("alice", Array(users[0..<100])).body["evicted"].strings.isEmpty)
            #expect(try await app.subscribe("alice", Array(users[100..<200])).body["evicted"].strings.isEmpty)
            let third = try await app.subscribe("alice", Array(users[150..<250]))
            #expect(third.status == 200)
            #expect(third.body["evicted"].strings == Array(users[0..<50]))
            let held = try await app.subscriptions("alice")
            #expect(held.count == 200)
            #expect(held == Array(users[50..<250]))
        }
    }

    @Test func unsubscribeListed() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "b", "c", "d"])
            #expect(try await app.subscribe("alice", ["b", "c", "d"]).status == 200)
            let response = try await app.unsubscribe("alice", ["c", "b", "c"])
            #expect(response.status == 200)
            #expect(response.body["unsubscribed"].strings == ["c", "b"])
            #expect(try await app.subscriptions("alice") == ["d"])
        }
    }

    @Test func unsubscribeWithEmptyOrMissingListRemovesAll() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "b", "c", "d"])
            #expect(try await app.subscribe("alice", ["b", "c", "d"]).status == 200)
            let all = try await app.unsubscribe("alice", nil)
            #expect(all.status == 200)
            #expect(all.body["unsubscribed"].strings == ["b", "c", "d"])
            #expect(try await app.subscriptions("alice").isEmpty)

            #expect(try await app.subscribe("alice", ["c", "b"]).status == 200)
            let empty = try await app.unsubscribe("alice", [])
            #expect(empty.status == 200)
            #expect(empty.body["unsubscribed"].strings == ["c", "b"])
            #expect(try await app.subscriptions("alice").isEmpty)

            #expect(try await app.subscribe("alice", ["d"]).status == 200)
            let noField = try await app.call(.delete, "/users/alice/subscriptions", [:])
            #expect(noField.status == 200)
            #expect(noField.body["unsubscribed"].strings == ["d"])
            #expect(try await app.subscriptions("alice").isEmpty)

            // Nothing held: still fine.
            #expect(try await app.unsubscribe("alice", nil).body["unsubscribed"].strings.isEmpty)
        }
    }

    @Test func subscriptionsAreDroppedAfterRetentionWhileNotOnline() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "subscriptionRetentionSeconds": 1])
            try await app.createUsers(["alice", "carol", "dave", "bob"])
            #expect(try await app.login("carol", "phone").status == 200)
            // Retention runs on the Redis clock: each outcome is asserted when the times measured here decide it (a
            // write is stamped between its send and its answer), so a machine that stalls cannot fail the test.
            let clock = ContinuousClock()
            let start = clock.now
            func elapsedMs() -> Int64 { Int64((clock.now - start) / .milliseconds(1)) }
            #expect(try await app.subscribe("alice", ["bob"]).status == 200)
            let aliceDone = elapsedMs()
            #expect(try await app.subscribe("carol", ["bob"]).status == 200)
            let daveFirstSent = elapsedMs()
            #expect(try await app.subscribe("dave", ["bob"]).status == 200)
            try await Task.sleep(for: .milliseconds(600))
            // A change to the list restarts the retention clock.
            let daveSent = elapsedMs()
            #expect(try await app.subscribe("dave", ["alice"]).status == 200)
            // The change kept bob only if it reached Redis before the first subscription's retention ran out.
            let daveChangedInTime = elapsedMs() < daveFirstSent + 1000 - 50
            try await Task.sleep(for: .milliseconds(max(0, aliceDone + 1000 + 100 - elapsedMs())))
            // alice was never online and did not touch her list: dropped; carol is online: kept; dave changed his: kept.
            #expect(try await app.subscriptions("alice").isEmpty)
            #expect(try await app.subscriptions("carol") == ["bob"])
            let dave = try await app.subscriptions("dave")
            if daveChangedInTime && elapsedMs() < daveSent + 1000 - 50 {
                #expect(dave == ["bob", "alice"])
            }
            // The clock starts when the user leaves online.
            #expect(try await app.logout("carol", "phone").status == 200)
            #expect(try await app.subscriptions("carol") == ["bob"])
            try await Task.sleep(for: .milliseconds(1300))
            #expect(try await app.subscriptions("carol").isEmpty)
            #expect(try await app.subscriptions("dave").isEmpty)
        }
    }
}
