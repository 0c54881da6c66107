import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §8: a login that kicked devices carries `kickedDevices`; a custom status set, changed or cleared (also the
/// automatic clearing when the user leaves `online`) is posted as `customStatusChange` without device fields. Part of
/// ``WebhookTests`` (serialized: every node delivers from the one shared stream).
extension WebhookTests {
    @Test func aLoginThatKickedDevicesListsThemAndEachKickIsPostedToo() async throws {
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            try await withStatusd { api in
                var config = Self.webhookConfig(url)
                if case .object(var fields) = config {
                    fields["loginPolicy"] = "singlePerPlatform"
                    fields["maxDevicesPerUser"] = 2
                    config = .object(fields)
                }
                let app = try await api.createApp(config: config)
                try await app.createUsers(["alice"])
                try await Self.login(app, "alice", "old-web", platform: "web")
                try await Self.login(app, "alice", "phone", platform: "ios")
                let plain = try await receiver.event { $0["action"] == "login" && $0["deviceId"] == "phone" }
                #expect(!plain.has("kickedDevices"))

                try await Self.login(app, "alice", "new-web", platform: "web")
                let login = try await receiver.event { $0["action"] == "login" && $0["deviceId"] == "new-web" }
                #expect(login["kickedDevices"] == [["deviceId": "old-web", "platform": "web"]])
                #expect(login["statusType"] == "online")
                let kick = try await receiver.event { $0["action"] == "logout" && $0["deviceId"] == "old-web" }
                #expect(kick["reason"] == "kicked")
                #expect(kick["platform"] == "web")

                // Past maxDevicesPerUser (2) the earliest remaining device goes too, and is listed likewise.
                try await Self.login(app, "alice", "desk", platform: "windows")
                let third = try await receiver.event { $0["action"] == "login" && $0["deviceId"] == "desk" }
                #expect(third["kickedDevices"] == [["deviceId": "phone", "platform": "ios"]])
                _ = try await receiver.event { $0["action"] == "logout" && $0["deviceId"] == "phone" && $0["reason"] == "kicked" }
            }
        }
    }

    @Test func customStatusChangesArePostedWithoutDeviceFields() async throws {
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            try await withStatusd { api in
                let app = try await api.createApp(config: Self.webhookConfig(url))
                try await app.createUsers(["bob"])
                func changes() -> [JSONValue] {
                    receiver.requests.map(\.json).filter { $0["action"] == "customStatusChange" }
                }

                Self.succeed(try await app.setStatus("bob", "reading"))
                let set = try await receiver.event { $0["action"] == "customStatusChange" }
                #expect(set["event"] == "stateChange")
                #expect(set["appId"].string == app.appId)
                #expect(set["userId"] == "bob")
                #expect(set["reason"] == "setCustomStatus")
                #expect(set["customStatus"] == "reading")
                #expect(set["statusType"] == "unlogined")
                #expect(set["eventTime"].int != nil)
                #expect(!set.has("deviceId") && !set.has("platform"))

                // Setting the same value changes nothing and posts nothing; clearing it is posted with null.
                Self.succeed(try await app.setStatus("bob", "reading"))
                Self.succeed(try await app.setStatus("bob", nil))
                let cleared = try await receiver.event { $0["action"] == "customStatusChange" && $0["customStatus"] == .null }
                #expect(cleared["reason"] == "setCustomStatus")
                #expect(cleared.has("customStatus"))
                #expect(changes().count == 2)

                // Leaving online clears it automatically: posted as `cleared`, next to the device's own logout.
                try await Self.login(app, "bob", "phone")
                Self.succeed(try await app.setStatus("bob", "on the train"))
                _ = try await receiver.event { $0["customStatus"] == "on the train" }
                Self.succeed(try await app.call(.post, "/users/bob/devices/phone/logout"))
                let automatic = try await receiver.event { $0["action"] == "customStatusChange" && $0["reason"] == "cleared" }
                #expect(automatic["customStatus"] == .null)
                #expect(automatic["statusType"] == "unlogined")
                #expect(!automatic.has("deviceId"))
                _ = try await receiver.event { $0["action"] == "logout" && $0["deviceId"] == "phone" }

                // Leaving online without a custom status clears nothing: no callback.
                try await Self.login(app, "bob", "phone")
                Self.succeed(try await app.call(.post, "/users/bob/devices/phone/logout"))
                _ = try await receiver.waitUntil { $0.filter { $0.json["action"] == "logout" }.count == 2 }
                try await Task.sleep(for: .milliseconds(300))
                #expect(changes().count == 4)
            }
        }
    }
}
