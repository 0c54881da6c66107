import Foundation
import HTTPTypes
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.5 blocks: a pair where either side blocked the other sees the other in the offline mask, without
/// `lastActiveAt`, with the public version as it stood when the block began, unmoving while the block lasts; then the
/// current public view again, whose version is not lower.
@Suite(.redis) struct BlockMaskTests {
    static let config: JSONValue = ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 1000, "windowSeconds": 1]]

    /// What `viewer` is shown of `userId`. A 503 (Redis slower than the command timeout on a busy machine) changed
    /// nothing (SPEC §7), so each call of these tests is sent again after one, as ``retryingUnavailable`` does.
    private func seen(_ app: APIClient, by viewer: String, _ userId: String) async throws -> JSONValue {
        try await retryingUnavailable { try await app.query(viewer, [userId]) }.body["statuses"][0]
    }

    private func call(_ app: APIClient, _ method: HTTPRequest.Method, _ path: String, _ body: JSONValue? = nil) async throws -> APIResponse {
        try await retryingUnavailable { try await app.call(method, path, body) }
    }

    @Test(arguments: ["alice", "bob"])
    func theMaskedVersionStandsWhateverTheOtherDoes(blocker: String) async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: Self.config)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.login("alice", "phone"))
            expectOK(try await app.setStatus("alice", "busy"))
            let before = try await seen(app, by: "bob", "alice")
            let version = try #require(before["version"].int)
            let other = blocker == "alice" ? "bob" : "alice"
            expectOK(try await call(app, .put, "/users/\(blocker)/blocks", ["userIds": [.string(other)]]))

            let masked: JSONValue = ["userId": "alice", "statusType": "offline", "version": .int(version), "onlineDevices": []]
            #expect(try await seen(app, by: "bob", "alice") == masked)
            // alice changes in every way a version can move; bob polls after each change and sees the same.
            let changes: [(String, String, JSONValue?)] = [
                ("PUT", "/users/alice/status", ["customStatus": "other"]),
                ("PUT", "/users/alice/status", ["availability": "dnd"]),
                ("POST", "/users/alice/devices/phone/logout", nil),
                ("POST", "/users/alice/devices/laptop/login", ["platform": "web"]),
                ("PUT", "/users/alice/status", ["availability": "invisible"]),
                ("PUT", "/users/alice/status", ["availability": "available"]),
                ("PUT", "/users/alice/status", ["customStatus": nil]),
            ]
            for (method, path, body) in changes {
                expectOK(try await call(app, method == "PUT" ? .put : .post, path, body))
                #expect(try await seen(app, by: "bob", "alice") == masked, "\(path) \(String(describing: body))")
                #expect(expectOK(try await retryingUnavailable { try await app.subscribe("bob", ["alice"]) })["statuses"][0] == masked)
            }
            // Blocking the other way too changes nothing; lifting one block of two neither.
            expectOK(try await call(app, .put, "/users/\(other)/blocks", ["userIds": [.string(blocker)]]))
            expectOK(try await call(app, .delete, "/users/\(other)/blocks", ["userIds": [.string(blocker)]]))
            #expect(try await seen(app, by: "bob", "alice") == masked)

            expectOK(try await call(app, .delete, "/users/\(blocker)/blocks", ["userIds": [.string(other)]]))
            let after = try await seen(app, by: "bob", "alice")
            #expect(after["statusType"] == "online")
            #expect((after["version"].int ?? 0) > version, "never lower, and here it moved")
        }
    }

    /// A device that hears of alice through its `roles:` scope only (no subscription, no friendship) is shown the mask
    /// on its socket when a block between them begins, as a subscriber is; a scope that does not name her role is not.
    @Test(arguments: ["alice", "bob"])
    func aRolesScopeIsShownTheMaskWhenABlockBegins(blocker: String) async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.config)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.call(.put, "/users/alice", ["role": "crew"]))
            expectOK(try await app.login("alice", "phone"))
            try await app.withDevice(port: api.client.port!, userId: "bob", DeviceOptions(deviceId: "crew", presence: "roles:crew")) {
                crew,
                _ in
                try await app.withDevice(port: api.client.port!, userId: "bob", DeviceOptions(deviceId: "ops", presence: "roles:ops")) {
                    ops,
                    _ in
                    expectOK(try await app.setStatus("alice", "busy"))
                    let heard = try await crew.next(timeout: .seconds(5)) {
                        $0["event"].string == "onUserStatusChanged" && $0["statuses"][0]["customStatus"].string == "busy"
                    }
                    let version = try #require(heard["statuses"][0]["version"].int)
                    let other = blocker == "alice" ? "bob" : "alice"
                    expectOK(try await app.call(.put, "/users/\(blocker)/blocks", ["userIds": [.string(other)]]))
                    let masked: JSONValue = ["userId": "alice", "statusType": "offline", "version": .int(version), "onlineDevices": []]
                    // alice's login may also have reached the device, before her change: that older event is passed over.
                    let mask = try await crew.nextStatus(of: "alice", newerThan: version - 1, timeout: .seconds(5))
                    #expect(mask == masked)
                    #expect(try await ops.statusEvents(of: "alice", settle: .milliseconds(300)).isEmpty)
                }
            }
        }
    }
}
