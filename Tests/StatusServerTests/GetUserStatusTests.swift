import Foundation
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §4 getUserStatus through `POST /users/{userId}/status/query`.
@Suite(.redis) struct GetUserStatusTests {
    @Test func selfQueryWorksOnBasicAndIsNeverLimited() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["rateLimit": ["calls": 2, "windowSeconds": 60]])
            try await app.createUsers(["alice"])
            for _ in 0..<30 {
                let response = try await app.query("alice", ["alice"])
                #expect(response.status == 200)
                #expect(response.body["statuses"].array.count == 1)
                #expect(response.body["statuses"][0]["userId"].string == "alice")
                #expect(response.body["failures"].array.isEmpty)
            }
            // Duplicates of oneself are still a self query.
            let folded = try await app.query("alice", ["alice", "alice", "alice"])
            #expect(folded.status == 200)
            #expect(folded.body["statuses"].array.count == 1)
        }
    }

    @Test func selfQueriesAreNotCounted() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 2, "windowSeconds": 60]])
            try await app.createUsers(["alice", "bob"])
            for _ in 0..<30 {
                #expect(try await app.query("alice", ["alice"]).status == 200)
            }
            #expect(try await app.query("alice", ["bob"]).status == 200)
            #expect(try await app.query("alice", ["bob"]).status == 200)
            expectError(try await app.query("alice", ["bob"]), 429, "RATE_LIMITED")
            // Still free while the others are limited.
            #expect(try await app.query("alice", ["alice"]).status == 200)
        }
    }

    @Test func othersNeedPremium() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            expectError(try await app.query("alice", ["bob"]), 403, "PLAN_NOT_SUPPORTED")
            expectError(try await app.query("alice", ["alice", "bob"]), 403, "PLAN_NOT_SUPPORTED")
            // The plan is checked before the switch.
            try await app.patchConfig(["statusQuery": true])
            expectError(try await app.query("alice", ["bob"]), 403, "PLAN_NOT_SUPPORTED")
        }
    }

    @Test func othersNeedTheStatusQuerySwitch() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["plan": "premium"])
            try await app.createUsers(["alice", "bob"])
            expectError(try await app.query("alice", ["bob"]), 403, "FEATURE_DISABLED")
            #expect(try await app.query("alice", ["alice"]).status == 200)
        }
    }

    @Test func batchLimitCountsIdsAsSent() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "queryBatchLimit": 3])
            try await app.createUsers(["alice", "bob", "carol"])
            expectError(try await app.query("alice", ["bob", "bob", "bob", "bob"]), 400, "TOO_MANY_USERS")
            expectError(try await app.query("alice", ["bob", "carol", "bob", "carol"]), 400, "TOO_MANY_USERS")
            let folded = try await app.query("alice", ["carol", "bob", "carol"])
            #expect(folded.status == 200)
            #expect(folded.body["statuses"].array.map { $0["userId"].string } == ["carol", "bob"])
        }
    }

    @Test func defaultBatchLimitIs500() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            let five = (0..<499).map { "nobody\($0)" } + ["bob"]
            let accepted = try await app.query("alice", five)
            #expect(accepted.status == 200)
            #expect(accepted.body["statuses"].array.count == 1)
            #expect(accepted.body["failures"].array.count == 499)
            expectError(try await app.query("alice", five + ["bob"]), 400, "TOO_MANY_USERS")
        }
    }

    @Test func unknownUsersAreFailures() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            let response = try await app.query("alice", ["ghost", "bob", "ghost", "alice"])
            #expect(response.status == 200)
            #expect(response.body["statuses"].array.map { $0["userId"].string } == ["bob", "alice"])
            #expect(response.body["failures"] == [["userId": "ghost", "code": "USER_NOT_FOUND"]])
        }
    }

    @Test func anUnknownCallerIsUserNotFoundAndNothingIsCounted() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 1, "windowSeconds": 60]])
            try await app.createUsers(["alice", "bob"])
            expectError(try await app.query("ghost", ["ghost"]), 404, "USER_NOT_FOUND")
            expectError(try await app.query("ghost", ["bob"]), 404, "USER_NOT_FOUND")
            let many = (0...StatusOperations.pipelinedQueryLimit).map { "u\($0)" } + ["bob"]
            expectError(try await app.query("ghost", many), 404, "USER_NOT_FOUND")
            // The one call alice may make is still hers: the refusals above counted nothing.
            #expect(try await app.query("alice", ["bob"]).status == 200)
            expectError(try await app.query("alice", ["bob"]), 429, "RATE_LIMITED")
        }
    }

    @Test func largeAndSmallCallsShareOneLimitAndRejectedOnesReturnNoStatuses() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 2, "windowSeconds": 60]])
            try await app.createUsers(["alice", "bob"])
            let many = (0...StatusOperations.pipelinedQueryLimit).map { "u\($0)" } + ["bob"]
            let large = try await app.query("alice", many)
            #expect(large.status == 200)
            #expect(large.body["statuses"].array.map { $0["userId"].string } == ["bob"])
            #expect(try await app.query("alice", ["bob"]).status == 200)
            let rejectedSmall = try await app.query("alice", ["bob"])
            expectError(rejectedSmall, 429, "RATE_LIMITED")
            #expect(rejectedSmall.body["statuses"] == .null)
            expectError(try await app.query("alice", many), 429, "RATE_LIMITED")
        }
    }

    /// The accepted reply of `query_rate_limit.lua`, read by its counts: a reply that does not add up is refused
    /// rather than read with friendship flags shifted onto other users.
    @Test func theAdmissionReplyIsReadByItsCounts() throws {
        let reply: [RedisValue] = [
            .integer(7), .integer(2), .bulkString(Array("x".utf8)), .bulkString(Array("y".utf8)), .bulkString(Array("4".utf8)),
            .bulkString([]), .integer(1), .integer(0), .integer(0),
        ]
        let admission = try StatusOperations.QueryAdmission(reply, asked: 3)
        #expect(
            admission
                == StatusOperations.QueryAdmission(callsLeft: 7, blocked: ["x", "y"], blockVersions: ["x": 4], friends: [true, false, false])
        )
        #expect(try StatusOperations.QueryAdmission([.integer(0), .integer(0), .integer(1)], asked: 1).friends == [true])
        #expect(throws: StatusReplyError.self) { try StatusOperations.QueryAdmission(reply, asked: 2) }
        #expect(throws: StatusReplyError.self) {
            try StatusOperations.QueryAdmission([.integer(1), .integer(3), .bulkString(Array("x".utf8))], asked: 0)
        }
        #expect(throws: StatusReplyError.self) { try StatusOperations.QueryAdmission([.integer(1)], asked: 0) }
        #expect(throws: StatusReplyError.self) { try StatusOperations.QueryAdmission([], asked: 0) }
    }

    @Test func emptyListIsInvalidRequest() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            expectError(try await app.query("alice", []), 400, "INVALID_REQUEST")
            expectError(try await app.call(.post, "/users/alice/status/query", [:]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.post, "/users/alice/status/query", ["userIds": "alice"]), 400, "INVALID_REQUEST")
        }
    }

    @Test func statusTypesFollowTheDevices() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            let never = try await app.query("alice", ["bob"]).body["statuses"][0]
            #expect(never["statusType"].string == "unlogined")
            #expect(!never.has("lastActiveAt"))
            #expect(!never.has("customStatus"))
            #expect(never["version"].int == 0)

            #expect(try await app.login("bob", "laptop", platform: "macos").status == 200)
            let online = try await app.query("alice", ["bob"]).body["statuses"][0]
            #expect(online["statusType"].string == "online")
            #expect(online["lastActiveAt"].int != nil)
            #expect(online["version"].int == 1)
            #expect(online["onlineDevices"] == [["deviceId": "laptop", "platform": "macos", "state": "active"]])

            #expect(try await app.logout("bob", "laptop").status == 200)
            let loggedOut = try await app.query("alice", ["bob"]).body["statuses"][0]
            #expect(loggedOut["statusType"].string == "unlogined")
            #expect(loggedOut["lastActiveAt"].int != nil)
            #expect(loggedOut["version"].int == 2)
            #expect(loggedOut["onlineDevices"].array.isEmpty)
        }
    }

    @Test func blocksInEitherDirectionMaskTheOther() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob", "carol"])
            for user in ["alice", "bob"] {
                #expect(try await app.login(user, "phone").status == 200)
                #expect(try await app.setStatus(user, "\(user) is busy").status == 200)
            }
            #expect(try await app.call(.put, "/users/alice/blocks", ["userIds": ["bob"]]).status == 200)

            // The blocker sees the blocked user as offline with nothing else.
            let byAlice = try await app.query("alice", ["bob", "carol"]).body["statuses"]
            #expect(byAlice[0]["userId"].string == "bob")
            #expect(byAlice[0]["statusType"].string == "offline")
            #expect(!byAlice[0].has("customStatus"))
            #expect(!byAlice[0].has("lastActiveAt"))
            #expect(byAlice[0]["onlineDevices"].array.isEmpty)
            #expect(byAlice[1]["statusType"].string == "unlogined")
            // And the other way round.
            let byBob = try await app.query("bob", ["alice"]).body["statuses"][0]
            #expect(byBob["statusType"].string == "offline")
            #expect(!byBob.has("customStatus"))
            #expect(!byBob.has("lastActiveAt"))
            // A third party sees the truth.
            let byCarol = try await app.query("carol", ["alice", "bob"]).body["statuses"]
            #expect(byCarol[0]["statusType"].string == "online")
            #expect(byCarol[0]["customStatus"].string == "alice is busy")
            #expect(byCarol[1]["statusType"].string == "online")
            #expect(byCarol[1]["customStatus"].string == "bob is busy")
            // Each still sees themselves.
            #expect(try await app.ownStatus("bob")["customStatus"].string == "bob is busy")

            #expect(try await app.call(.delete, "/users/alice/blocks", ["userIds": ["bob"]]).status == 200)
            let unblocked = try await app.query("bob", ["alice"]).body["statuses"][0]
            #expect(unblocked["statusType"].string == "online")
            #expect(unblocked["customStatus"].string == "alice is busy")
        }
    }

    @Test func badIdInTheListFailsTheWholeCall() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            expectError(try await app.query("alice", ["bob", "not valid"]), 400, "INVALID_USER_ID")
            expectError(try await app.query("alice", ["alice", String(repeating: "x", count: 129)]), 400, "INVALID_USER_ID")
        }
    }

    @Test func requestsWhileOnlineAreActivity() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            // Not online: a request is no activity, lastActiveAt stays absent.
            #expect(try await app.query("bob", ["alice"]).status == 200)
            #expect(try await app.setStatus("bob", "x").status == 200)
            #expect(!(try await app.backendStatus("bob")).has("lastActiveAt"))

            let login = try await app.login("alice", "d1")
            var last = try #require(login.body["lastActiveAt"].int)
            try await Task.sleep(for: .milliseconds(20))
            #expect(try await app.query("alice", ["bob"]).status == 200)
            let afterQuery = try #require(try await app.backendStatus("alice")["lastActiveAt"].int)
            #expect(afterQuery > last)
            last = afterQuery
            try await Task.sleep(for: .milliseconds(20))
            #expect(try await app.subscribe("alice", ["bob"]).status == 200)
            let afterSubscribe = try #require(try await app.backendStatus("alice")["lastActiveAt"].int)
            #expect(afterSubscribe > last)
            last = afterSubscribe
            try await Task.sleep(for: .milliseconds(20))
            // A query of oneself is free and uncounted, but still activity.
            let own = try await app.query("alice", ["alice"])
            let afterOwnQuery = try #require(own.body["statuses"][0]["lastActiveAt"].int)
            #expect(afterOwnQuery > last)
            last = afterOwnQuery
            try await Task.sleep(for: .milliseconds(20))
            #expect(try await app.setStatus("alice", "busy").status == 200)
            let afterSet = try #require(try await app.backendStatus("alice")["lastActiveAt"].int)
            #expect(afterSet > last)
            // Leaving online is the last moment; requests after that do not move it.
            let gone = try #require(try await app.logout("alice", "d1").body["lastActiveAt"].int)
            #expect(gone >= afterSet)
            try await Task.sleep(for: .milliseconds(20))
            #expect(try await app.query("alice", ["bob"]).status == 200)
            #expect(try await app.backendStatus("alice")["lastActiveAt"].int == gone)
        }
    }
}
