import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §2 last-seen privacy: a user's `lastSeenPrivacy` (else the app default) decides who else sees `lastActiveAt`,
/// in replies and in events; the user, the backend query and app-key listings always see it.
@Suite(.redis) struct LastSeenPrivacyTests {
    /// alice hides it from everyone, bob shows it to friends (dave is one), carol set nothing (the app default).
    private func setUp(_ app: APIClient) async throws {
        try await app.createUsers(["carol", "dave", "eve"])
        expectOK(try await app.call(.put, "/users/alice", ["lastSeenPrivacy": "nobody"]))
        expectOK(try await app.call(.put, "/users/bob", ["lastSeenPrivacy": "friends"]))
        expectOK(try await app.call(.put, "/users/dave/friends", ["userIds": ["bob", "alice"]]))
        for user in ["alice", "bob", "carol"] {
            expectOK(try await app.login(user, "d"))
            expectOK(try await app.logout(user, "d"))
        }
    }

    private func lastActive(_ response: APIResponse) -> [String: Bool] {
        var seen: [String: Bool] = [:]
        for status in response.body["statuses"].array {
            if let id = status["userId"].string { seen[id] = status.has("lastActiveAt") }
        }
        return seen
    }

    @Test func getUserStatusOfOthersHidesItAsEachUserChose() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            let users = ["alice", "bob", "carol"]
            #expect(lastActive(try await app.query("dave", users)) == ["alice": false, "bob": true, "carol": true])
            #expect(lastActive(try await app.query("eve", users)) == ["alice": false, "bob": false, "carol": true])
            // The user themself always sees it, also within a query about others.
            #expect(lastActive(try await app.query("alice", ["alice", "bob"])) == ["alice": true, "bob": false])
            #expect(try await app.ownStatus("alice").has("lastActiveAt"))
        }
    }

    /// Friendship is asked for every user of the call, in its order, whether the reads share the rate-limit check's
    /// round trip (up to 100 ids) or follow it (more): bob's place among unknown users must not shift whom it is read for.
    @Test func friendshipIsReadForEachAskedUserOfSmallAndLargeCalls() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            for ghosts in [10, 130] {
                let ids = (0..<ghosts).map { "ghost\($0)" } + ["bob"] + (0..<5).map { "nobody\($0)" } + ["alice", "carol"]
                let byDave = try await app.query("dave", ids)
                #expect(byDave.body["failures"].array.count == ghosts + 5)
                #expect(lastActive(byDave) == ["alice": false, "bob": true, "carol": true])
                #expect(lastActive(try await app.query("eve", ids)) == ["alice": false, "bob": false, "carol": true])
            }
        }
    }

    @Test func theBackendQueryAndAppKeyListingsAlwaysSeeIt() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "lastSeenPrivacy": "nobody"])
            try await setUp(app)
            let query = try await app.call(.post, "/status/query", ["userIds": ["alice", "bob", "carol"]])
            #expect(lastActive(query) == ["alice": true, "bob": true, "carol": true])
            let listing = try await app.call(.get, "/users?status=offline&limit=100")
            let listed = listing.body["users"].array.filter { ["alice", "bob", "carol"].contains($0["userId"].string ?? "") }
            #expect(listed.count == 3)
            #expect(listed.allSatisfy { $0.has("lastActiveAt") })
        }
    }

    @Test func theAppDefaultAppliesToUsersWhoSetNothing() async throws {
        let clock = ManualNodeClock()
        try await withStatusd(configure: clock.install) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            #expect(lastActive(try await app.query("eve", ["carol"])) == ["carol": true])
            try await app.patchConfig(["lastSeenPrivacy": "friends"])
            clock.advance(by: AppRegistry.cacheTTL + .milliseconds(100))
            #expect(lastActive(try await app.query("eve", ["carol", "bob"])) == ["carol": false, "bob": false])
            expectOK(try await app.call(.put, "/users/carol/friends", ["userIds": ["eve"]]))
            #expect(lastActive(try await app.query("eve", ["carol"])) == ["carol": true])
            // A user's own setting wins over the default.
            expectOK(try await app.call(.put, "/users/carol", ["lastSeenPrivacy": "everyone"]))
            #expect(lastActive(try await app.query("dave", ["carol"])) == ["carol": true])
        }
    }

    @Test func aBadDefaultIsRefusedAndChangesNothing() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            for bad: JSONValue in ["friendsOnly", nil, false] {
                expectError(try await app.admin(.patch, "/v1/apps/\(app.appId)/config", ["lastSeenPrivacy": bad]), 400, "INVALID_REQUEST")
            }
            #expect(try await app.admin(.get, "/v1/apps/\(app.appId)").body["config"]["lastSeenPrivacy"] == "everyone")
        }
    }

    @Test func eventsCarryItOnlyToThoseAllowedToSeeIt() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            for watcher in ["dave", "eve"] { expectOK(try await app.subscribe(watcher, ["alice", "bob", "carol"])) }
            let port = api.client.port!
            try await app.withDevice(port: port, userId: "dave", DeviceOptions(deviceId: "dave-phone")) { dave, _ in
                try await app.withDevice(port: port, userId: "eve", DeviceOptions(deviceId: "eve-phone")) { eve, _ in
                    try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-phone")) { bob, _ in
                        let own = try await bob.nextStatus(of: "bob")
                        #expect(own.has("lastActiveAt"), "the user's own devices see it")
                        let friend = try await dave.nextStatus(of: "bob")
                        let stranger = try await eve.nextStatus(of: "bob")
                        #expect(friend.has("lastActiveAt"))
                        #expect(!stranger.has("lastActiveAt"))
                        #expect(friend["version"] == stranger["version"])
                        #expect(stranger["statusType"] == "online")
                    }
                    expectOK(try await app.login("alice", "tablet"))
                    #expect(!(try await dave.nextStatus(of: "alice")).has("lastActiveAt"))
                    #expect(!(try await eve.nextStatus(of: "alice")).has("lastActiveAt"))
                    expectOK(try await app.login("carol", "tablet"))
                    #expect(try await dave.nextStatus(of: "carol").has("lastActiveAt"))
                    #expect(try await eve.nextStatus(of: "carol").has("lastActiveAt"))
                }
            }
        }
    }

    @Test func getUserStatusOverTheWebSocketAppliesItToo() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            try await app.withDevice(port: api.client.port!, userId: "eve", DeviceOptions(deviceId: "eve-phone")) { eve, _ in
                let reply = try await eve.request("getUserStatus", ["userIds": ["alice", "bob", "carol"]])
                let statuses = reply["result"]["statuses"].array
                #expect(statuses.count == 3)
                #expect(statuses.map { $0.has("lastActiveAt") } == [false, false, true])
            }
        }
    }
}
