import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.5: an invisible user is shown to others exactly as a user who went offline when they became invisible, by
/// every answer, event and number (the public version); the user and the app's own reads see the truth.
@Suite(.redis) struct InvisibilityTests {
    /// premium + statusQuery, with room for the many queries of a transcript.
    static let config: JSONValue = ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 1000, "windowSeconds": 1]]

    /// How the watched users act.
    enum Transport: String, CaseIterable, Sendable {
        /// `PUT /users/{userId}/status`.
        case http
        /// The `setSelfStatus` frame of the user's device.
        case webSocket
    }

    /// What a transcript compares: everything but whose status it is and when exactly they were last active.
    static func normalized(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let fields):
            var copy: [String: JSONValue] = [:]
            for (key, field) in fields where key != "userId" {
                copy[key] = key == "lastActiveAt" ? .bool(true) : normalized(field)
            }
            return .object(copy)
        case .array(let items):
            return .array(items.map(normalized))
        default:
            return value
        }
    }

    @Test func othersSeeAnInvisibleUserOfflineInEveryAnswerAndTheAppSeesTheTruth() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: Self.config)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.login("alice", "phone"))
            expectOK(try await app.setStatus("alice", "here"))
            let before = try await app.query("bob", ["alice"]).body["statuses"][0]
            #expect(before["statusType"] == "online" && before["version"] == 2)
            let own = expectOK(try await app.call(.put, "/users/alice/status", ["availability": "invisible"]))
            #expect(own["statusType"] == "online" && own["availability"] == "invisible" && own["customStatus"] == "here")
            #expect(own["version"] == 3)

            let seen = try await app.query("bob", ["alice"]).body["statuses"][0]
            #expect(seen["statusType"] == "offline")
            #expect(seen["version"] == 3)
            #expect(seen["onlineDevices"] == [])
            #expect(seen.has("lastActiveAt"))
            for absent in ["customStatus", "availability", "customStatusExpiresAt"] { #expect(!seen.has(absent)) }
            // The subscribe reply shows the same.
            let subscribed = expectOK(try await app.subscribe("bob", ["alice"]))
            #expect(subscribed["statuses"][0] == seen)
            // Whatever alice does now, others see the same thing.
            expectOK(try await app.setStatus("alice", "secret"))
            expectOK(try await app.login("alice", "laptop"))
            expectOK(try await app.logout("alice", "phone"))
            #expect(try await app.query("bob", ["alice"]).body["statuses"][0] == seen)

            // The user, the backend query and the listing see the truth.
            let truth = try await app.ownStatus("alice")
            #expect(truth["statusType"] == "online" && truth["availability"] == "invisible" && truth["customStatus"] == "secret")
            #expect(truth["version"] == 4)
            #expect(try await app.backendStatus("alice")["statusType"] == "online")
            let listed = expectOK(try await app.call(.get, "/users?status=online&limit=10"))["users"].array
            #expect(listed.contains { $0["userId"] == "alice" && $0["availability"] == "invisible" })
        }
    }

    @Test func becomingVisibleWhileOfflineShowsTheRealDepartureAsOneChange() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: Self.config)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.login("alice", "phone"))
            expectOK(try await app.call(.put, "/users/alice/status", ["availability": "invisible"]))
            let hidden = try await app.query("bob", ["alice"]).body["statuses"][0]
            expectOK(try await app.logout("alice", "phone"))
            #expect(try await app.query("bob", ["alice"]).body["statuses"][0] == hidden)
            expectOK(try await app.call(.put, "/users/alice/status", ["availability": "busy"]))
            let visible = try await app.query("bob", ["alice"]).body["statuses"][0]
            #expect(visible["statusType"] == "unlogined")
            #expect(!visible.has("availability"))
            #expect(visible["version"].int == (hidden["version"].int ?? 0) + 1)
        }
    }

    /// SPEC §10.5 resume: a device that comes back hears of an invisible user only what moved in the public view.
    @Test func aResumedDeviceHearsOnlyWhatMovedInThePublicView() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.config)
            try await app.createUsers(["alice", "bob", "carol"])
            expectOK(try await app.subscribe("carol", ["alice", "bob"]))
            expectOK(try await app.login("alice", "phone"))
            expectOK(try await app.login("bob", "phone"))
            expectOK(try await app.call(.put, "/users/alice/status", ["availability": "invisible"]))
            // Older changes are never resent (the clock margin is 1 s).
            try await Task.sleep(for: .milliseconds(1100))
            let port = try #require(api.client.port)
            let token = try await app.withDevice(port: port, userId: "carol", DeviceOptions(deviceId: "carol-1")) { _, welcome in
                try #require(welcome["resume"].string)
            }
            // While carol is away: alice edits her status and drops (nothing public); bob goes offline (public).
            expectOK(try await app.setStatus("alice", "secret"))
            expectOK(try await app.logout("alice", "phone"))
            expectOK(try await app.logout("bob", "phone"))
            try await app.withDevice(port: port, userId: "carol", DeviceOptions(deviceId: "carol-1", resume: token)) { device, _ in
                let resumed = try await device.next { $0["event"] == "onUserStatusChanged" }
                let users = resumed["statuses"].array.compactMap { $0["userId"].string }
                #expect(users.contains("bob") && !users.contains("alice"), "\(users)")
                try await Task.sleep(for: .milliseconds(300))
                #expect(try await device.statusEvents(of: "alice", settle: .zero).isEmpty)
            }
        }
    }

    /// SPEC §10.5 item 6 of the issue: carol watches alice and bob (a subscription, a WebSocket device, and a second
    /// device with presence scope `all`). alice goes
    /// invisible, edits her status, connects a second device, drops both, comes back and becomes visible; bob goes
    /// offline and comes back online. After each step carol's events about the user and her answers to a query about
    /// them (over HTTP and over her socket) are recorded, without the user's id and with `lastActiveAt` reduced to its
    /// presence: the two transcripts, versions included, are the same, whether the users act over HTTP or their socket.
    @Test(arguments: Transport.allCases)
    func aWatchersTranscriptOfGoingInvisibleIsTheSameAsOfGoingOffline(transport: Transport) async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.config)
            try await app.createUsers(["alice", "bob", "carol"])
            expectOK(try await app.subscribe("carol", ["alice", "bob"]))
            let port = try #require(api.client.port)
            try await withThrowingTaskGroup(of: Void.self) { group in
                let carol = try await app.openDevice(port: port, userId: "carol", DeviceOptions(deviceId: "carol-1")) {
                    group.addTask(operation: $0)
                }.0
                // A second device of hers hears everyone of the app (presence scope `all`, the app's slot channels).
                let everyone = try await app.openDevice(port: port, userId: "carol", DeviceOptions(deviceId: "carol-2", presence: "all")) {
                    group.addTask(operation: $0)
                }.0
                var devices: [String: TestDevice] = [:]
                for user in ["alice", "bob"] {
                    devices[user + "/d1"] = try await app.openDevice(port: port, userId: user, DeviceOptions(deviceId: "d1")) {
                        group.addTask(operation: $0)
                    }.0
                }

                func set(_ user: String, _ fields: [String: JSONValue]) async throws {
                    switch transport {
                    case .http:
                        expectOK(try await app.call(.put, "/users/\(user)/status", .object(fields)))
                    case .webSocket:
                        let reply = try await #require(devices[user + "/d1"]).request("setSelfStatus", fields)
                        #expect(reply["ok"] == true, "\(reply)")
                    }
                }
                func waitFor(_ user: String, _ type: String) async throws {
                    let deadline = ContinuousClock.now + .seconds(5)
                    while try await app.backendStatus(user)["statusType"].string != type {
                        guard ContinuousClock.now < deadline else { throw TestAppError(message: "\(user) not \(type)") }
                        try await Task.sleep(for: .milliseconds(20))
                    }
                }
                var transcripts: [String: [JSONValue]] = [:]
                // The highest version each of carol's devices has taken of each user.
                var heard: [String: Int64] = [:]
                // Her view now, then the events that brought each device to it: waiting by version, not for a time
                // window, so a busy machine delays the events without moving them into the next step's record.
                func record(_ user: String) async throws {
                    let http = expectOK(try await app.query("carol", [user]))
                    let version = http["statuses"][0]["version"].int ?? 0
                    var taken: [JSONValue] = []
                    for (name, device) in [("carol-1", carol), ("carol-2", everyone)] {
                        let events = try await device.statusEvents(of: user, reaching: version, after: heard[name + user] ?? -1)
                        heard[name + user] = max(heard[name + user] ?? -1, events.compactMap { $0["version"].int }.max() ?? -1)
                        taken.append(.array(events))
                    }
                    let socket = try await carol.request("getUserStatus", ["userIds": [.string(user)]])
                    transcripts[user, default: []] += (taken + [http, socket["result"]]).map(Self.normalized)
                }

                for user in ["alice", "bob"] { try await set(user, ["customStatus": "hello"]) }
                for user in ["alice", "bob"] { try await record(user) }
                // The set-up is taken (`heard`) but not compared: a bus gap while it runs makes the node resend every
                // status it had not delivered yet, a user's unchanged first one included, which a client drops by its
                // version (SPEC §2) and which says nothing about invisibility.
                transcripts = [:]

                // alice: goes invisible, edits her status, connects a second device, drops both, comes back, visible.
                try await set("alice", ["availability": "invisible"])
                try await record("alice")
                try await set("alice", ["customStatus": "secret"])
                try await record("alice")
                devices["alice/d2"] = try await app.openDevice(port: port, userId: "alice", DeviceOptions(deviceId: "d2")) {
                    group.addTask(operation: $0)
                }.0
                try await record("alice")
                await devices["alice/d1"]?.close()
                await devices["alice/d2"]?.close()
                try await waitFor("alice", "offline")
                try await record("alice")
                devices["alice/d1"] = try await app.openDevice(port: port, userId: "alice", DeviceOptions(deviceId: "d1")) {
                    group.addTask(operation: $0)
                }.0
                try await record("alice")
                try await set("alice", ["availability": "available"])
                try await record("alice")

                // bob: goes offline, comes back online.
                await devices["bob/d1"]?.close()
                try await waitFor("bob", "offline")
                for _ in 0..<5 { try await record("bob") }
                devices["bob/d1"] = try await app.openDevice(port: port, userId: "bob", DeviceOptions(deviceId: "d1")) {
                    group.addTask(operation: $0)
                }.0
                try await record("bob")

                // Nothing more arrives about either of them: an event sent late would have no place in the transcripts.
                for user in ["alice", "bob"] {
                    #expect(try await carol.statusEvents(of: user).isEmpty, "late events about \(user)")
                    #expect(try await everyone.statusEvents(of: user, settle: .zero).isEmpty, "late events about \(user)")
                }
                let alice = transcripts["alice"] ?? []
                let bob = transcripts["bob"] ?? []
                #expect(alice.count == 24)
                #expect(alice == bob)
                // It is not empty of news: carol saw each of them leave and come back, at public versions 3 and 4 (after
                // 1 and 2 from the set-up), on both her devices.
                for offset in [0, 1] {
                    let versions = stride(from: offset, to: bob.count, by: 4).flatMap { bob[$0].array.map { $0["version"] } }
                    #expect(versions == [3, 4])
                }
                for device in devices.values { await device.close() }
                await carol.close()
                await everyone.close()
                group.cancelAll()
            }
        }
    }
}

extension InvisibilityTests {
    /// SPEC §10.5: an invisible user who really went offline meanwhile and then leaves invisibility while offline shows
    /// others what they saw: offline since the moment they became invisible, at the same public version (a later
    /// lastActiveAt would tell them the user had been online while invisible).
    @Test func leavingInvisibilityWhileOfflineKeepsTheFrozenLastActiveAt() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.config)
            try await app.createUsers(["alice", "bob"])
            let port = try #require(api.client.port)
            let seen = try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { _, _ in
                expectOK(try await app.call(.put, "/users/alice/status", ["availability": "invisible"]))
                let seen = try await app.query("bob", ["alice"]).body["statuses"][0]
                try await Task.sleep(for: .milliseconds(300))
                return seen
            }
            #expect(seen["statusType"] == "offline" && seen.has("lastActiveAt"), "\(seen)")
            let deadline = ContinuousClock.now + .seconds(3)
            while try await app.ownStatus("alice")["statusType"] == "online" {
                guard ContinuousClock.now < deadline else { throw TestAppError(message: "alice still online") }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await app.query("bob", ["alice"]).body["statuses"][0] == seen)
            expectOK(try await app.call(.put, "/users/alice/status", ["availability": "available"]))
            #expect(try await app.query("bob", ["alice"]).body["statuses"][0] == seen)
            #expect(try await app.ownStatus("alice")["lastActiveAt"] == seen["lastActiveAt"])
        }
    }
}
