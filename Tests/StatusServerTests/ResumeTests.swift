import Foundation
import Logging
import RedisClient
import StatusCore
import StatusdClient
import Testing

@testable import StatusServer

/// SPEC §7 resume: the welcome carries a `resume` token; a device reconnecting with it within
/// `heartbeatTimeoutSeconds` of losing its socket receives, right after its welcome, one `onUserStatusChanged` with the
/// current status of every user it may hear about whose version moved meanwhile. Unknown or expired tokens are ignored.
@Suite(.redis) struct ResumeTests {
    /// alice subscribes to bob and carol; carol's change happens well before alice's session, bob's while she is away.
    private func setUp(_ api: APIClient) async throws {
        let app = try api.appFacade()
        for user in ["alice", "bob", "carol"] { try await app.putUser(user) }
        #expect(try await app.subscribeUserStatus(["bob", "carol"], for: "alice").subscribed == ["bob", "carol"])
        try await app.setSelfStatus("carol", customStatus: "older news")
        // bob has been seen, so his status has a lastActiveAt.
        try await app.backendLogin("bob", device: "bob-phone", platform: .web)
        try await app.backendLogout("bob", device: "bob-phone")
        // Changes this much older than the session are never resent (the node's clock margin is 1 s).
        try await Task.sleep(for: .milliseconds(1100))
    }

    /// Connects alice's device, returns its welcome's token once its socket is closed and its departure filed.
    private func sessionThatLosesItsSocket(_ app: APIClient, port: Int, deviceId: String = "alice-phone") async throws -> String {
        let token = try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: deviceId)) { _, welcome in
            try #require(welcome["resume"].string)
        }
        try await waitUntilOffline(app, "alice")
        return token
    }

    private func waitUntilOffline(_ app: APIClient, _ userId: String) async throws {
        let deadline = ContinuousClock.now + .seconds(3)
        while try await app.backendStatus(userId)["statusType"] == "online" {
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "\(userId) still online") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func aResumedDeviceGetsWhatMovedRightAfterItsWelcome() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            let port = api.client.port!
            let token = try await sessionThatLosesItsSocket(app, port: port)
            #expect(!token.isEmpty)
            expectOK(try await app.setStatus("bob", "missed"))

            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-phone", resume: token)) { device, welcome in
                #expect(welcome["resume"].string != token, "every session has a token of its own")
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                let frames = try device.rawFrames.map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
                #expect(frames.first?["event"] == "welcome")
                let resumed = try #require(frames.dropFirst().first)
                #expect(resumed["event"] == "onUserStatusChanged")
                let users = resumed["statuses"].array.compactMap { $0["userId"].string }
                // bob moved while she was away; so did alice herself (offline, then online again); carol did not.
                #expect(users == ["alice", "bob"])
                let bob = resumed["statuses"].array.first { $0["userId"] == "bob" }
                #expect(bob?["customStatus"] == "missed")
                #expect(bob?.has("lastActiveAt") == true)
            }
        }
    }

    /// SPEC §7: only users whose version moved while the device was away. bob changes while alice's socket is up (she
    /// receives it) and her socket closes right after, with no sign of life in between: the resume must not list bob
    /// again, but must list carol, who changed after the close.
    @Test func aVersionReceivedBeforeTheSocketClosedIsNotResent() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            let port = api.client.port!
            let token = try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-phone")) { device, welcome in
                expectOK(try await app.setStatus("bob", "seen live"))
                _ = try await device.next { $0["event"] == "onUserStatusChanged" && $0["statuses"][0]["customStatus"] == "seen live" }
                return try #require(welcome["resume"].string)
            }
            try await waitUntilOffline(app, "alice")
            expectOK(try await app.setStatus("carol", "missed"))
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-phone", resume: token)) { device, _ in
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                let frames = try device.rawFrames.map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
                let resumed = try #require(frames.dropFirst().first)
                #expect(resumed["statuses"].array.compactMap { $0["userId"].string } == ["alice", "carol"])
            }
        }
    }

    /// The moment a resume resends from is taken on Redis's clock, which stamps every change: a node whose wall clock
    /// runs seconds ahead of Redis's still resends a change made right after the socket closed.
    @Test func aNodeClockAheadOfRedisMissesNothing() async throws {
        try await withHeldNode { api, _, clock in
            // The node's wall clock 5 s ahead of Redis's.
            try await clock.step(by: .seconds(5))
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            let port = api.client.port!
            let token = try await sessionThatLosesItsSocket(app, port: port)
            expectOK(try await app.setStatus("bob", "missed"))
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-phone", resume: token)) { device, _ in
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                let frames = try device.rawFrames.map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
                let resumed = try #require(frames.dropFirst().first)
                #expect(resumed["statuses"].array.compactMap { $0["userId"].string } == ["alice", "bob"])
            }
        }
    }

    @Test func withoutATokenOrWithAnUnknownOneItIsAPlainConnect() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            let port = api.client.port!
            _ = try await sessionThatLosesItsSocket(app, port: port)
            expectOK(try await app.setStatus("bob", "missed"))
            for resume in [nil, "0B1C2D3E-unknown", "not:a:token", String(repeating: "a", count: 65)] {
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-phone", resume: resume)) { device, _ in
                    let missed = try await device.statusEvents(of: "bob")
                    #expect(missed.isEmpty, "resume \(resume ?? "none")")
                }
                try await waitUntilOffline(app, "alice")
            }
        }
    }

    @Test func aTokenExpiresWithTheHeartbeatTimeout() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "heartbeatTimeoutSeconds": 5])
            try await setUp(app)
            let port = api.client.port!
            let token = try await sessionThatLosesItsSocket(app, port: port)
            expectOK(try await app.setStatus("bob", "missed"))
            try await Task.sleep(for: .milliseconds(5300))
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-phone", resume: token)) { device, _ in
                let missed = try await device.statusEvents(of: "bob")
                #expect(missed.isEmpty)
            }
        }
    }

    @Test func aTokenOfAnotherDeviceIsIgnored() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            let port = api.client.port!
            let token = try await sessionThatLosesItsSocket(app, port: port)
            expectOK(try await app.setStatus("bob", "missed"))
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-laptop", resume: token)) { device, _ in
                let missed = try await device.statusEvents(of: "bob")
                #expect(missed.isEmpty)
            }
        }
    }

    @Test func aResumeSendsOnlyWhatTheDeviceMayHearAndHidesLastSeenAsTheUserChose() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            let facade = try app.appFacade()
            try await facade.putUser("dave")
            try await facade.putUser("bob", profile: UserProfileInput(lastSeenPrivacy: .nobody))
            // alice and dave are friends, but without friendStatusNotify or the friends scope she does not hear of him.
            try await facade.addFriends("alice", ["dave"])
            let port = api.client.port!
            let token = try await sessionThatLosesItsSocket(app, port: port)
            expectOK(try await app.setStatus("bob", "missed"))
            expectOK(try await app.setStatus("dave", "not for alice"))
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-phone", resume: token)) { device, _ in
                let bob = try await device.nextStatus(of: "bob")
                #expect(bob["customStatus"] == "missed")
                #expect(!bob.has("lastActiveAt"))
                #expect(try await device.statusEvents(of: "dave").isEmpty)
            }
        }
    }

    @Test func aDeviceWhoseOldConnectionWasNeverFiledResumesFromThatConnection() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            let port = api.client.port!
            // The old socket is still open (half-open, say) when the device reconnects under the same deviceId.
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-phone")) { old, welcome in
                let token = try #require(welcome["resume"].string)
                expectOK(try await app.setStatus("bob", "while half-open"))
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-phone", resume: token)) { device, _ in
                    let bob = try await device.nextStatus(of: "bob")
                    #expect(bob["customStatus"] == "while half-open")
                    let carol = try await device.statusEvents(of: "carol")
                    #expect(carol.isEmpty)
                    let kicked = try await old.next { $0["event"] == "kicked" }
                    #expect(kicked["reason"] == "replaced")
                }
            }
        }
    }

    @Test func scopesAllAndRolesAreBroughtUpToDateAboutAnyoneTheyHearOf() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await setUp(app)
            try await app.appFacade().putUser("dave", profile: UserProfileInput(role: "ops"))
            try await app.appFacade().putUser("erin", profile: UserProfileInput(role: "guest"))
            let port = api.client.port!
            for scope in ["all", "roles:ops"] {
                let token = try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "wall", presence: scope)) { _, welcome in
                    try #require(welcome["resume"].string)
                }
                try await waitUntilOffline(app, "alice")
                expectOK(try await app.setStatus("dave", "on call \(scope)"))
                expectOK(try await app.setStatus("erin", "visiting \(scope)"))
                let options = DeviceOptions(deviceId: "wall", presence: scope, resume: token)
                try await app.withDevice(port: port, userId: "alice", options) { device, _ in
                    let dave = try await device.nextStatus(of: "dave")
                    #expect(dave["customStatus"].string == "on call \(scope)")
                    // bob (subscribed) moved before this session; erin moved, but a roles:ops device does not hear of her.
                    let erin = try await device.statusEvents(of: "erin")
                    #expect(erin.map { $0["customStatus"].string } == (scope == "all" ? ["visiting all"] : []))
                    let bob = try await device.statusEvents(of: "bob", settle: .zero)
                    #expect(bob.isEmpty)
                }
                try await waitUntilOffline(app, "alice")
            }
        }
    }

    /// setSelfStatus logs who changed (for the resume of `all`/`roles:` devices) only while such a session exists or
    /// lately existed: the app's slot is not written by every status change of an app that has none.
    @Test func theRecentChangesLogIsWrittenOnlyForAppsWithAppWideSessions() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "resume-test"))
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            let keys = RedisKeys(appId: app.appId)
            expectOK(try await app.setStatus("bob", "before"))
            #expect(try await redis.send("EXISTS", keys.recentChanges).int == 0)
            #expect(try await redis.send("EXISTS", keys.appWideListeners).int == 0)
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "wall", presence: "all")) { _, _ in
                // The mark lasts as long as a resume can look back (heartbeat timeout plus two lease periods).
                let ttl = try await redis.send("PTTL", keys.appWideListeners).int ?? 0
                #expect(ttl > 400_000)
                expectOK(try await app.setStatus("bob", "during"))
                let logged = try await redis.send("ZRANGE", keys.recentChanges, "0", "-1").array?.compactMap(\.string) ?? []
                #expect(logged.contains("bob"))
            }
        }
        await redis.close()
    }
}

extension ResumeTests {
    /// SPEC §7: only users whose version moved while the device was away. What the welcome and the snapshot carried
    /// reached the socket before it closed under the node: alice's own status (kept online by an offline grace, it did
    /// not move again) and bob's change of just before the connect are not resent; carol, who changed after the
    /// close, is.
    @Test func whatTheWelcomeAndTheSnapshotCarriedIsNotResent() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "offlineGraceSeconds": 30])
            try await setUp(app)
            let port = try #require(api.client.port)
            expectOK(try await app.setStatus("bob", "just before"))
            let token = try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-phone", snapshot: true)) {
                device,
                welcome in
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                return try #require(welcome["resume"].string)
            }
            // The drop filed: alice is in her grace, still online, her version unmoved.
            let deadline = ContinuousClock.now + .seconds(3)
            while try await app.ownStatus("alice")["onlineDevices"] != [] {
                guard ContinuousClock.now < deadline else { throw TestAppError(message: "the drop was not filed") }
                try await Task.sleep(for: .milliseconds(20))
            }
            expectOK(try await app.setStatus("carol", "missed"))
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-phone", resume: token)) { device, _ in
                try await device.waitFor { $0["event"] == "onUserStatusChanged" }
                let frames = try device.rawFrames.map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
                let resumed = try #require(frames.dropFirst().first)
                #expect(resumed["statuses"].array.compactMap { $0["userId"].string } == ["carol"], "\(resumed)")
            }
        }
    }
}
