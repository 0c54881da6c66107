import Foundation
import Testing

@testable import StatusdClient

/// The example frames of the AsyncAPI document (`/asyncapi.json`), which scripts/test-frames validates against its
/// schemas beside the frames a live node really sends, read through `StatusDevice`'s own decoders: what the document
/// shows a device receiving, the Swift client understands.
@Suite struct DeviceFrameExamplesTests {
    static let document = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/StatusServer/Resources/asyncapi.json")

    /// The messages the server sends, by name, and how the client reads them; the requests the device sends.
    static let serverMessages = [
        "welcome", "statusChanged", "statusSnapshot", "kicked", "statusReply", "statusQueryReply", "subscribeReply",
        "unsubscribeReply", "heartbeatReply", "errorReply",
    ]
    static let requestMessages = [
        "setSelfStatus", "getUserStatus", "subscribeUserStatus", "unsubscribeUserStatus", "heartbeat", "setDeviceState",
        "logout",
    ]

    /// Every example of a message: its name and its payload as the bytes of a frame.
    private func examples(of message: String) throws -> [(name: String, frame: Data, payload: [String: Any])] {
        let root = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.document)) as? [String: Any]
        let channel = (root?["channels"] as? [String: Any])?["device"] as? [String: Any]
        let messages = channel?["messages"] as? [String: Any]
        let examples = (messages?[message] as? [String: Any])?["examples"] as? [[String: Any]] ?? []
        return try examples.map { example in
            let payload = try #require(example["payload"] as? [String: Any])
            return (example["name"] as? String ?? "?", try JSONSerialization.data(withJSONObject: payload), payload)
        }
    }

    @Test func everyMessageOfTheDocumentHasExamplesAndATestHere() throws {
        let root = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.document)) as? [String: Any]
        let channel = (root?["channels"] as? [String: Any])?["device"] as? [String: Any]
        let names = Set((channel?["messages"] as? [String: Any] ?? [:]).keys)
        #expect(names == Set(Self.serverMessages + Self.requestMessages))
        for name in names { #expect(try !examples(of: name).isEmpty, "\(name) has no example") }
    }

    @Test func theWelcomeExamplesDecode() throws {
        for example in try examples(of: "welcome") {
            guard case .welcome(let welcome) = StatusDevice.read(example.frame) else {
                Issue.record("welcome/\(example.name) is not read as a welcome")
                continue
            }
            #expect(welcome.userId == example.payload["userId"] as? String)
            #expect(welcome.deviceId == example.payload["deviceId"] as? String)
            #expect(welcome.heartbeatSeconds == example.payload["heartbeatSeconds"] as? Int)
            #expect(welcome.resume == example.payload["resume"] as? String)
            #expect(welcome.status.userId == welcome.userId)
        }
    }

    @Test func theStatusEventExamplesDecodeWithTheirSnapshotAndTruncatedFlags() throws {
        for message in ["statusChanged", "statusSnapshot"] {
            for example in try examples(of: message) {
                guard case .statusChanged(let statuses, let snapshot, let truncated) = StatusDevice.read(example.frame) else {
                    Issue.record("\(message)/\(example.name) is not read as onUserStatusChanged")
                    continue
                }
                let listed = example.payload["statuses"] as? [[String: Any]] ?? []
                #expect(statuses.map(\.userId) == listed.map { $0["userId"] as? String ?? "" })
                #expect(statuses.map { Int($0.version) } == listed.map { $0["version"] as? Int ?? -1 })
                #expect(snapshot == (message == "statusSnapshot"))
                #expect(truncated == (example.payload["truncated"] as? Bool ?? false))
            }
        }
    }

    @Test func theKickedExamplesDecode() throws {
        for example in try examples(of: "kicked") {
            guard case .kicked(let reason) = StatusDevice.read(example.frame) else {
                Issue.record("kicked/\(example.name) is not read as kicked")
                continue
            }
            #expect(reason == example.payload["reason"] as? String)
        }
    }

    /// Each reply goes to its request by `id`, and its `result` decodes as the type the request asks for.
    @Test func theReplyExamplesDecodeAsTheirRequestsResults() throws {
        func reply<Result: Decodable>(_ message: String, as type: Result.Type, check: (Result, [String: Any]) -> Void) throws {
            for example in try examples(of: message) {
                guard case .reply(let id) = StatusDevice.read(example.frame) else {
                    Issue.record("\(message)/\(example.name) is not read as a reply")
                    continue
                }
                #expect(id == example.payload["id"] as? String)
                let result = try StatusDevice.result(of: example.frame, as: type)
                check(result, example.payload["result"] as? [String: Any] ?? [:])
            }
        }
        try reply("statusReply", as: UserStatus.self) { status, result in
            #expect(status.userId == result["userId"] as? String)
            #expect(status.customStatus == result["customStatus"] as? String)
            #expect(status.onlineDevices?.count == (result["onlineDevices"] as? [Any])?.count)
        }
        try reply("statusQueryReply", as: StatusQueryResult.self) { query, result in
            #expect(query.statuses.count == (result["statuses"] as? [Any])?.count)
            #expect(query.failures.map(\.userId) == (result["failures"] as? [[String: Any]])?.map { $0["userId"] as? String ?? "" })
        }
        try reply("subscribeReply", as: SubscribeResult.self) { subscribe, result in
            #expect(subscribe.subscribed == result["subscribed"] as? [String])
            #expect(subscribe.statuses.count == (result["statuses"] as? [Any])?.count)
        }
        try reply("unsubscribeReply", as: UnsubscribeResult.self) { unsubscribe, result in
            #expect(unsubscribe.unsubscribed == result["unsubscribed"] as? [String])
        }
        try reply("heartbeatReply", as: HeartbeatResult.self) { heartbeat, result in
            #expect(heartbeat.heartbeatSeconds == result["heartbeatSeconds"] as? Int)
        }
    }

    /// An error reply throws its code and `retryAfterMs`; one whose `id` could not be read (`null`) belongs to no
    /// request of this client, which sends string ids, and is ignored.
    @Test func theErrorReplyExamplesThrowTheirCodes() throws {
        for example in try examples(of: "errorReply") {
            let detail = try #require(example.payload["error"] as? [String: Any])
            guard case .reply = StatusDevice.read(example.frame) else {
                #expect(example.payload["id"] is NSNull, "errorReply/\(example.name) is not read as a reply")
                continue
            }
            let error = #expect(throws: StatusdError.self) { try StatusDevice.result(of: example.frame, as: UserStatus.self) }
            #expect(error?.code.rawValue == detail["code"] as? String)
            #expect(error?.message == detail["message"] as? String)
            #expect(error?.retryAfterMs == detail["retryAfterMs"] as? Int)
        }
    }
}
