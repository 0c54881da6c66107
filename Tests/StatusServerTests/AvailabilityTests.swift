import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.1 availability: set by setSelfStatus over both transports (alone or with a custom status), any plan, never
/// rate-limited; an unknown value is `INVALID_REQUEST`; kept across offline periods and devices; a change is +1 version,
/// notified, and posted as `availabilityChange`; shown whenever the viewer sees the user online, always to the user.
@Suite(.redis) struct AvailabilityTests {
    private func setAvailability(_ app: APIClient, _ userId: String, _ body: JSONValue) async throws -> APIResponse {
        try await app.call(.put, "/users/\(userId)/status", body)
    }

    @Test func setAloneOrWithACustomStatusOnABasicPlan() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let busy = expectOK(try await setAvailability(app, "alice", ["availability": "busy"]))
            #expect(busy["availability"] == "busy")
            #expect(busy["version"] == 1)
            // The same value again changes nothing.
            #expect(expectOK(try await setAvailability(app, "alice", ["availability": "busy"]))["version"] == 1)
            // Both at once are one change.
            let both = expectOK(try await setAvailability(app, "alice", ["availability": "dnd", "customStatus": "focus"]))
            #expect(both["availability"] == "dnd" && both["customStatus"] == "focus" && both["version"] == 2)
            // A custom status alone keeps the availability.
            let text = expectOK(try await app.setStatus("alice", "later"))
            #expect(text["availability"] == "dnd" && text["version"] == 3)
            let own = try await app.ownStatus("alice")
            #expect(own["availability"] == "dnd")
            // The default is available, shown in the own view.
            try await app.createUsers(["bob"])
            #expect(try await app.ownStatus("bob")["availability"] == "available")
            #expect(try await app.backendStatus("alice")["availability"] == "dnd")
        }
    }

    @Test func unknownValuesAreRefusedAndChangeNothing() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            for bad: JSONValue in ["Busy", "offline", "", nil, 3, ["busy"]] {
                expectError(try await setAvailability(app, "alice", ["availability": bad]), 400, "INVALID_REQUEST")
            }
            expectError(try await setAvailability(app, "alice", ["availability": "busy", "mood": "x"]), 400, "INVALID_REQUEST")
            let own = try await app.ownStatus("alice")
            #expect(own["availability"] == "available" && own["version"] == 0)
        }
    }

    @Test func keptAcrossOfflinePeriodsAndDevicesUnlikeTheCustomStatus() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            expectOK(try await app.login("alice", "phone"))
            expectOK(try await setAvailability(app, "alice", ["availability": "away", "customStatus": "lunch"]))
            expectOK(try await app.logout("alice", "phone"))
            let back = expectOK(try await app.login("alice", "laptop"))
            #expect(back["availability"] == "away")
            #expect(!back.has("customStatus"))
        }
    }

    @Test func othersSeeItOnlyWhileTheySeeTheUserOnline() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await setAvailability(app, "alice", ["availability": "busy"]))
            let offline = try await app.query("bob", ["alice"]).body["statuses"][0]
            #expect(offline["statusType"] == "unlogined" && !offline.has("availability"))
            expectOK(try await app.login("alice", "phone"))
            let online = try await app.query("bob", ["alice"]).body["statuses"][0]
            #expect(online["statusType"] == "online" && online["availability"] == "busy")
        }
    }

    @Test func aChangeOverTheWebSocketIsNotifiedToTheUserAndWatchers() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            let port = api.client.port!
            expectOK(try await app.subscribe("bob", ["alice"]))
            try await app.withDevice(port: port, userId: "bob", DeviceOptions(deviceId: "bob-1")) { watcher, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "alice-1")) { device, _ in
                    _ = try await watcher.nextStatus(of: "alice")
                    let reply = try await device.request("setSelfStatus", ["availability": "dnd"])
                    #expect(reply["ok"] == true)
                    #expect(reply["result"]["availability"] == "dnd")
                    let version = try #require(reply["result"]["version"].int)
                    let own = try await device.next { $0["event"] == "onUserStatusChanged" && $0["statuses"][0]["version"].int == version }
                    #expect(own["statuses"][0]["availability"] == "dnd")
                    let seen = try await watcher.nextStatus(of: "alice")
                    #expect(seen["availability"] == "dnd" && seen["statusType"] == "online")
                    let refused = try await device.request("setSelfStatus", ["availability": "gone"])
                    #expect(refused["error"]["code"] == "INVALID_REQUEST")
                    let unknown = try await device.request("setSelfStatus", ["availability": "busy", "clear": 1])
                    #expect(unknown["error"]["code"] == "INVALID_REQUEST")
                    for fields: [String: JSONValue] in [["availability": nil], ["customStatus": "x", "clearAfterSeconds": nil]] {
                        let refusedNull = try await device.request("setSelfStatus", fields)
                        #expect(refusedNull["error"]["code"] == "INVALID_REQUEST", "\(fields)")
                    }
                    // Nothing refused changed anything.
                    let now = try await device.request("getUserStatus", ["userIds": ["alice"]])
                    #expect(now["result"]["statuses"][0]["version"].int == version)
                }
            }
        }
    }

    @Test func aChangeIsPostedAsAvailabilityChange() async throws {
        let receiver = WebhookReceiver(planned: [])
        try await receiver.run { url in
            try await withStatusd { api in
                let app = try await api.createApp(config: WebhookTests.webhookConfig(url))
                try await app.createUsers(["alice"])
                expectOK(try await setAvailability(app, "alice", ["availability": "invisible"]))
                let requests = try await receiver.waitUntil { $0.contains { $0.json["action"] == "availabilityChange" } }
                let event = try #require(requests.first { $0.json["action"] == "availabilityChange" }).json
                #expect(event["availability"] == "invisible")
                #expect(event["userId"] == "alice")
                #expect(!event.has("deviceId") && !event.has("platform") && !event.has("customStatus"))
                #expect(!requests.contains { $0.json["action"] == "customStatusChange" })
            }
        }
    }
}
