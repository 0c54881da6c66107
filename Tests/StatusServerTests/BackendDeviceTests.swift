import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §2 and §7: devices driven by a backend (login / heartbeat / logout / kick) and the backend status query.
@Suite(.redis) struct BackendDeviceTests {
    @Test func loginMakesTheUserOnline() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let first = try await app.login("alice", "phone-1", platform: "ios")
            #expect(first.status == 200)
            #expect(first.body["userId"].string == "alice")
            #expect(first.body["statusType"].string == "online")
            #expect(first.body["version"].int == 1)
            #expect(first.body["lastActiveAt"].int != nil)
            #expect(first.body["onlineDevices"] == [["deviceId": "phone-1", "platform": "ios", "state": "active"]])
            // A second device changes only onlineDevices.
            let second = try await app.login("alice", "web_1", platform: "web")
            #expect(second.body["statusType"].string == "online")
            #expect(second.body["version"].int == 1)
            #expect(
                Set(second.body["onlineDevices"].array) == [
                    ["deviceId": "phone-1", "platform": "ios", "state": "active"], ["deviceId": "web_1", "platform": "web", "state": "active"],
                ]
            )
            // Logging the same deviceId in again replaces it.
            let replaced = try await app.login("alice", "phone-1", platform: "ipad")
            #expect(replaced.body["version"].int == 1)
            #expect(
                Set(replaced.body["onlineDevices"].array) == [
                    ["deviceId": "phone-1", "platform": "ipad", "state": "active"], ["deviceId": "web_1", "platform": "web", "state": "active"],
                ]
            )
        }
    }

    @Test func everyPlatformIsAccepted() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            for platform in ["ios", "android", "ipad", "web", "windows", "macos", "linux", "other"] {
                #expect(try await app.login("alice", "d-\(platform)", platform: platform).status == 200)
            }
            #expect(try await app.backendStatus("alice")["onlineDevices"].array.count == 8)
        }
    }

    @Test func heartbeatAnswersTheStatus() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let login = try await app.login("alice", "d1")
            let beat = try await app.call(.post, "/users/alice/devices/d1/heartbeat")
            #expect(beat.status == 200)
            #expect(beat.body["statusType"].string == "online")
            #expect(beat.body["version"].int == login.body["version"].int)
            #expect((beat.body["lastActiveAt"].int ?? 0) >= (login.body["lastActiveAt"].int ?? .max))
        }
    }

    @Test func logoutOfTheLastDeviceIsUnloginedAndClearsTheCustomStatusOnce() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            #expect(try await app.login("alice", "d1").status == 200)
            #expect(try await app.login("alice", "d2").status == 200)
            let custom = try await app.setStatus("alice", "in a meeting")
            let version = try #require(custom.body["version"].int)
            #expect(version == 2)

            let partial = try await app.logout("alice", "d1")
            #expect(partial.status == 200)
            #expect(partial.body["statusType"].string == "online")
            #expect(partial.body["customStatus"].string == "in a meeting")
            #expect(partial.body["version"].int == version)
            #expect(partial.body["onlineDevices"] == [["deviceId": "d2", "platform": "web", "state": "active"]])

            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let last = try await app.logout("alice", "d2")
            #expect(last.body["statusType"].string == "unlogined")
            #expect(!last.body.has("customStatus"))
            #expect(last.body["version"].int == version + 1)
            #expect(last.body["onlineDevices"].array.isEmpty)
            #expect((last.body["lastActiveAt"].int ?? 0) >= before - 1000)
            let stored = try await app.backendStatus("alice")
            #expect(stored["version"].int == version + 1)
            #expect(!stored.has("customStatus"))

            // Logging out a device that is not there changes nothing.
            let again = try await app.logout("alice", "d2")
            #expect(again.status == 200)
            #expect(again.body["version"].int == version + 1)
        }
    }

    @Test func kickOneDevice() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            #expect(try await app.login("alice", "d1").status == 200)
            #expect(try await app.login("alice", "d2", platform: "android").status == 200)
            let kicked = try await app.call(.post, "/users/alice/kick", ["deviceId": "d1"])
            #expect(kicked.status == 200)
            #expect(kicked.body == ["kicked": ["d1"]])
            let status = try await app.backendStatus("alice")
            #expect(status["statusType"].string == "online")
            #expect(status["onlineDevices"] == [["deviceId": "d2", "platform": "android", "state": "active"]])
            // Kicking a device that is not connected kicks nothing.
            #expect(try await app.call(.post, "/users/alice/kick", ["deviceId": "d9"]).body == ["kicked": []])
        }
    }

    @Test func kickAllDevicesLeavesTheUserUnlogined() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            #expect(try await app.login("alice", "d1").status == 200)
            #expect(try await app.login("alice", "d2").status == 200)
            #expect(try await app.setStatus("alice", "here").body["version"].int == 2)
            let kicked = try await app.call(.post, "/users/alice/kick")
            #expect(kicked.status == 200)
            #expect(Set(kicked.body["kicked"].strings) == ["d1", "d2"])
            let status = try await app.backendStatus("alice")
            #expect(status["statusType"].string == "unlogined")
            #expect(!status.has("customStatus"))
            #expect(status["version"].int == 3)
            #expect(status["onlineDevices"].array.isEmpty)

            // An empty object kicks all too.
            #expect(try await app.login("bob", "d1").status == 200)
            #expect(try await app.call(.post, "/users/bob/kick", [:]).body == ["kicked": ["d1"]])
            #expect(try await app.backendStatus("bob")["statusType"].string == "unlogined")
            // Nothing left to kick.
            #expect(try await app.call(.post, "/users/bob/kick").body == ["kicked": []])
        }
    }

    @Test func badPlatformOrDeviceIdIsRejected() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            for platform in ["IOS", "blackberry", ""] {
                expectError(try await app.login("alice", "d1", platform: platform), 400, "INVALID_REQUEST")
            }
            expectError(try await app.call(.post, "/users/alice/devices/d1/login", [:]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.post, "/users/alice/devices/d1/login", ["platform": 1]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.post, "/users/alice/devices/d1/login"), 400, "INVALID_REQUEST")
            for device in ["a.b", "a@b", String(repeating: "d", count: 65)] {
                expectError(try await app.login("alice", device), 400, "INVALID_USER_ID")
                expectError(try await app.call(.post, "/users/alice/devices/\(device)/heartbeat"), 400, "INVALID_USER_ID")
                expectError(try await app.logout("alice", device), 400, "INVALID_USER_ID")
                expectError(try await app.call(.post, "/users/alice/kick", ["deviceId": .string(device)]), 400, "INVALID_USER_ID")
            }
            expectError(try await app.call(.post, "/users/alice/kick", ["deviceId": ""]), 400, "INVALID_USER_ID")
            #expect(try await app.login("alice", String(repeating: "d", count: 64)).status == 200)
            let status = try await app.backendStatus("alice")
            #expect(status["onlineDevices"].array.count == 1)
            #expect(status["version"].int == 1)
        }
    }

    /// The sweep finds silent devices on the node's clock, which the test moves instead of waiting, and removes one
    /// only when it has been silent for the timeout on Redis's clock, which stamped its heartbeats. This node's clock
    /// runs ahead of Redis's (as a skewed node's would, and every node sweeps every app): alice is not offline before
    /// five real seconds of silence, and is soon after.
    @Test func silentDeviceGoesOfflineAfterTheHeartbeatTimeout() async throws {
        let clock = ManualNodeClock()
        try await withStatusd(configure: clock.install) { api in
            let app = try await api.createApp(config: ["heartbeatTimeoutSeconds": 5])
            try await app.createUsers(["alice", "bob"])
            let loggedIn = ContinuousClock.now
            #expect(try await app.login("alice", "d1").status == 200)
            #expect(try await app.setStatus("alice", "here").status == 200)
            #expect(try await app.login("bob", "d1").status == 200)
            // bob heartbeats short of the timeout; alice stays silent.
            try await clock.step(by: .milliseconds(4500))
            #expect(try await app.call(.post, "/users/bob/devices/d1/heartbeat").status == 200)
            #expect(try await app.backendStatus("alice")["statusType"].string == "online", "offline before the timeout")
            // Past it on the node's clock, a sweep (once a second of the node's time) finds her; bob heartbeats every
            // second of it.
            var alice = try await app.backendStatus("alice")
            let deadline = ContinuousClock.now + .seconds(15)
            var step = 0
            while alice["statusType"].string == "online", ContinuousClock.now < deadline {
                try await clock.step(by: .milliseconds(250))
                step += 1
                if step % 4 == 0 { #expect(try await app.call(.post, "/users/bob/devices/d1/heartbeat").status == 200) }
                alice = try await app.backendStatus("alice")
                if alice["statusType"].string == "online" { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(alice["statusType"].string == "offline")
            #expect(ContinuousClock.now - loggedIn >= .seconds(5), "offline before five seconds of silence on Redis's clock")
            #expect(!alice.has("customStatus"))
            #expect(alice["version"].int == 3)
            #expect(alice["onlineDevices"].array.isEmpty)
            #expect(try await app.backendStatus("bob")["statusType"].string == "online")
        }
    }

    /// The sweep visits the apps of an index kept by backend logins; an app whose devices were stored before the index
    /// existed is indexed once (by whichever node runs first), and a deleted app leaves the index.
    @Test func theSweepFindsAppsThroughItsIndexAndDeletedAppsLeaveIt() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "backend-index-test"))
        try await withStatusd { api in
            let app = try await api.createApp(config: ["heartbeatTimeoutSeconds": 5])
            try await app.createUsers(["alice"])
            #expect(try await app.login("alice", "d1").status == 200)
            #expect(try await redis.send("SISMEMBER", RedisKeys.backendApps, app.appId).int == 1)
            // As if stored before the index existed: not in it, and the one-time indexing not done yet.
            _ = try await redis.send("SREM", RedisKeys.backendApps, app.appId)
            _ = try await redis.send("DEL", RedisKeys.backendAppsIndexed)
            let deadline = ContinuousClock.now + .seconds(12)
            var alice = try await app.backendStatus("alice")
            while ContinuousClock.now < deadline, alice["statusType"].string == "online" {
                try await Task.sleep(for: .milliseconds(500))
                alice = try await app.backendStatus("alice")
            }
            #expect(alice["statusType"].string == "offline")
            #expect(try await redis.send("SISMEMBER", RedisKeys.backendApps, app.appId).int == 1)
            #expect(try await api.admin(.delete, "/v1/apps/\(app.appId)").status == 204)
            var indexed = 1
            for _ in 0..<40 where indexed == 1 {
                try await Task.sleep(for: .milliseconds(250))
                indexed = Int(try await redis.send("SISMEMBER", RedisKeys.backendApps, app.appId).int ?? 1)
            }
            #expect(indexed == 0)
        }
        await redis.close()
    }
}

/// SPEC §7 `POST /status/query`: the backend's own view.
@Suite(.redis) struct BackendQueryTests {
    @Test func detailAddsOnlineDevices() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            #expect(try await app.login("alice", "phone", platform: "ios").status == 200)
            let plain = try await app.call(.post, "/status/query", ["userIds": ["alice", "bob"]])
            #expect(plain.status == 200)
            #expect(plain.body["statuses"].array.count == 2)
            #expect(plain.body["statuses"].array.allSatisfy { !$0.has("onlineDevices") })
            #expect(plain.body["statuses"][0]["statusType"].string == "online")
            #expect(plain.body["statuses"][1]["statusType"].string == "unlogined")
            let noDetail = try await app.call(.post, "/status/query", ["userIds": ["alice"], "detail": false])
            #expect(!noDetail.body["statuses"][0].has("onlineDevices"))

            let detailed = try await app.call(.post, "/status/query", ["userIds": ["alice", "bob"], "detail": true])
            #expect(detailed.body["statuses"][0]["onlineDevices"] == [["deviceId": "phone", "platform": "ios", "state": "active"]])
            #expect(detailed.body["statuses"][1]["onlineDevices"].array.isEmpty)
        }
    }

    @Test func noGatingNoBlockingNoRateLimit() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["rateLimit": ["calls": 1, "windowSeconds": 60]])
            try await app.createUsers(["alice", "bob"])
            #expect(try await app.login("bob", "d1").status == 200)
            #expect(try await app.setStatus("bob", "visible").status == 200)
            #expect(try await app.call(.put, "/users/alice/blocks", ["userIds": ["bob"]]).status == 200)
            for _ in 0..<30 {
                let response = try await app.call(.post, "/status/query", ["userIds": ["alice", "bob"]])
                #expect(response.status == 200)
                #expect(response.body["statuses"][1]["statusType"].string == "online")
                #expect(response.body["statuses"][1]["customStatus"].string == "visible")
                #expect(response.body["statuses"][1]["lastActiveAt"].int != nil)
            }
        }
    }

    @Test func foldsDuplicatesAndReportsUnknownUsers() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            let response = try await app.call(.post, "/status/query", ["userIds": ["bob", "ghost", "alice", "bob", "ghost"]])
            #expect(response.status == 200)
            #expect(response.body["statuses"].array.map { $0["userId"].string } == ["bob", "alice"])
            #expect(response.body["failures"] == [["userId": "ghost", "code": "USER_NOT_FOUND"]])
        }
    }

    @Test func atMost500Ids() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let five = (0..<499).map { "n\($0)" } + ["alice"]
            let ok = try await app.call(.post, "/status/query", ["userIds": ids(five)])
            #expect(ok.status == 200)
            #expect(ok.body["statuses"].array.count == 1)
            #expect(ok.body["failures"].array.count == 499)
            expectError(try await app.call(.post, "/status/query", ["userIds": ids(five + ["alice"])]), 400, "TOO_MANY_USERS")
            expectError(try await app.call(.post, "/status/query", ["userIds": []]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.post, "/status/query", [:]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.post, "/status/query", ["userIds": ["alice"], "detail": "yes"]), 400, "INVALID_REQUEST")
        }
    }
}
