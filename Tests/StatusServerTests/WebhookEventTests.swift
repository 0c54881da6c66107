import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §8 bodies as written: device transitions with their device fields (and `kickedDevices` only when a login kicked
/// some), custom status changes without device fields and with `customStatus` always present.
@Suite struct WebhookEventTests {
    private func encoded(_ action: WebhookEvent.Action, _ statusType: StatusType = .online) throws -> JSONValue {
        let event = WebhookEvent(appId: "app", userId: "alice", action: action, statusType: statusType, eventTime: 1_700_000_000_000)
        return try JSONDecoder().decode(JSONValue.self, from: Data(try JSONCoding.string(event).utf8))
    }

    @Test func aLoginWithoutKicksHasNoKickedDevices() throws {
        let body = try encoded(.device(deviceId: "d", platform: "web", action: "login", reason: "register", kickedDevices: []))
        #expect(
            body == [
                "event": "stateChange", "appId": "app", "userId": "alice", "deviceId": "d", "platform": "web", "action": "login",
                "reason": "register", "statusType": "online", "eventTime": 1_700_000_000_000,
            ]
        )
    }

    @Test func aLoginThatKickedListsTheDevices() throws {
        let kicked = [WebhookEvent.KickedDevice(deviceId: "old", platform: "android")]
        let body = try encoded(.device(deviceId: "d", platform: "android", action: "login", reason: "register", kickedDevices: kicked))
        #expect(body["kickedDevices"] == [["deviceId": "old", "platform": "android"]])
    }

    @Test func aCustomStatusChangeHasNoDeviceFieldsAndAlwaysACustomStatus() throws {
        let set = try encoded(.customStatus(customStatus: "busy", reason: "setCustomStatus"))
        #expect(
            set == [
                "event": "stateChange", "appId": "app", "userId": "alice", "action": "customStatusChange", "reason": "setCustomStatus",
                "customStatus": "busy", "statusType": "online", "eventTime": 1_700_000_000_000,
            ]
        )
        let cleared = try encoded(.customStatus(customStatus: nil, reason: "cleared"), .offline)
        #expect(cleared.has("customStatus") && cleared["customStatus"] == .null)
        #expect(cleared["statusType"] == "offline")
    }
}
