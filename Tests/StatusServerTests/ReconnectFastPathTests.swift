import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// A device reconnecting to the node that still hears its user (``DepartedRelations``): its connect is one script
/// call, with no admission round trip and no read of the relationships; and it hears exactly what its relationships
/// say now, whatever changed them while it was away.
@Suite(.redis) struct ReconnectFastPathTests {
    static let config: JSONValue = ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 1000, "windowSeconds": 1]]

    /// Waits until the node has no session of any user left: the departure was filed and the index let the user go.
    private func waitUntilNoLocalUser(_ api: APIClient) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let text = try await api.metricsText()
            let line = text.split(separator: "\n").first { $0.hasPrefix("statusd_local_online_users ") }
            if let value = line?.split(separator: " ").last.flatMap({ Double($0) }), value == 0 { return }
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "the node still holds a user: \(line ?? "no gauge")") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A reconnect reads no relationships and asks no admission: the one rate-limit check is the connect's own
    /// (`device_connect.lua`), which lists the device on the node too; and the relationships given back are the user's (bob is heard).
    @Test func aReconnectToTheNodeThatHearsTheUserIsOneScriptCall() async throws {
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        try await withStatusd(.live, configure: server.install) { api in
            let app = try await api.createApp(config: Self.config)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("alice", ["bob"]))
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { _, _ in }
            try await waitUntilNoLocalUser(api)
            try await server.withClient("probe") { redis in
                let before = try await RefusalCostTests.commandCounts(redis)
                try await Self.startLoggingCommands(redis)
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { device, _ in
                    let after = try await RefusalCostTests.commandCounts(redis)
                    // The admission's check and its read of the relationships would each show here.
                    #expect(after["zcount", default: 0] - before["zcount", default: 0] == 1)
                    #expect(after["sunion", default: 0] - before["sunion", default: 0] == 0)
                    #expect(after["smembers", default: 0] - before["smembers", default: 0] == 0)
                    // On a single server the node's device list and the app's online index are written by the connect
                    // script itself (ConnectAlongsideTests): no command of the node's own names them.
                    let sent = try await Self.loggedCommands(redis)
                    let online = RedisKeys(appId: app.appId).online
                    #expect(!sent.contains { $0.first?.uppercased() == "SADD" }, "\(sent)")
                    #expect(!sent.contains { $0.first?.uppercased() == "EVALSHA" && $0.dropFirst(3).first == online }, "\(sent)")
                    let connect = sent.filter { $0.first?.uppercased() == "EVALSHA" && $0.contains(online) }
                    #expect(connect.count == 1 && connect[0].contains(RedisKeys(appId: app.appId).user("alice").status), "\(sent)")
                    expectOK(try await app.setStatus("bob", "back"))
                    #expect(try await device.nextStatus(of: "bob")["customStatus"] == "back")
                }
            }
        }
    }

    /// Logs every command from here on (`SLOWLOG` with a threshold of 0), from an empty log.
    static func startLoggingCommands(_ redis: RedisClient) async throws {
        _ = try await redis.send("CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "100000")
        _ = try await redis.send("SLOWLOG", "RESET")
    }

    /// The commands clients sent since ``startLoggingCommands(_:)``, oldest first, without those that scripts ran
    /// (logged with the client address `?:0`) and without the log's own reads and resets.
    static func loggedCommands(_ redis: RedisClient) async throws -> [[String]] {
        let entries = try await redis.send("SLOWLOG", "GET", "-1").array ?? []
        return entries.reversed().compactMap { entry -> [String]? in
            guard let fields = entry.array, fields.count >= 5, fields[4].string != "?:0" else { return nil }
            let command = (fields[3].array ?? []).map { $0.string ?? "" }
            return ["SLOWLOG", "CONFIG", "INFO"].contains(command.first?.uppercased() ?? "") ? nil : command
        }
    }

    /// Relationships changed while the user was away (a subscription made, one ended, a block) are the ones the
    /// reconnected device hears by: the node heard each change on the user's channel and kept nothing. One change per
    /// absence, so that each is the only thing that could tell the node.
    @Test func aReconnectHearsByTheRelationshipsAsTheyAreNow() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.config)
            try await app.createUsers(["alice", "bob", "carol", "dave"])
            expectOK(try await app.subscribe("alice", ["bob", "dave"]))
            let port = try #require(api.client.port)
            /// Connects alice, runs `body`, and waits until the node let her go again.
            func visit(_ body: @escaping @Sendable (TestDevice) async throws -> Void) async throws {
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { device, _ in try await body(device) }
                try await waitUntilNoLocalUser(api)
            }
            try await visit { device in
                expectOK(try await app.setStatus("bob", "one"))
                #expect(try await device.nextStatus(of: "bob")["customStatus"] == "one")
            }
            expectOK(try await app.subscribe("alice", ["carol"]))
            try await visit { device in
                expectOK(try await app.setStatus("carol", "two"))
                #expect(try await device.nextStatus(of: "carol")["customStatus"] == "two")
            }
            expectOK(try await app.unsubscribe("alice", ["bob"]))
            try await visit { device in
                expectOK(try await app.setStatus("bob", "three"))
                expectOK(try await app.setStatus("carol", "four"))
                // Once carol's later change is in, bob's (made before it) would have been too.
                #expect(try await device.nextStatus(of: "carol")["customStatus"] == "four")
                #expect(try await device.statusEvents(of: "bob", settle: .zero).isEmpty)
            }
            expectOK(try await retryingUnavailable { try await app.call(.put, "/users/dave/blocks", ["userIds": ["alice"]]) })
            try await visit { device in
                expectOK(try await app.setStatus("dave", "five"))
                expectOK(try await app.setStatus("carol", "six"))
                #expect(try await device.nextStatus(of: "carol")["customStatus"] == "six")
                #expect(try await device.statusEvents(of: "dave", settle: .zero).allSatisfy { $0["customStatus"] == .null })
            }
        }
    }

    /// SPEC §10.6, §10.7: a connect past `connectRateLimit` on the fast path is refused by the connect script's check
    /// alone: nothing of the user is stored, and the refusal is not counted against later connects.
    @Test func aReconnectPastTheLimitIsRefusedAndStoresNothing() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["plan": "premium", "connectRateLimit": ["calls": 2, "windowSeconds": 60]])
            try await app.createUsers(["alice"])
            let port = try #require(api.client.port)
            try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { _, _ in
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "tablet")) { _, _ in
                    let before = try await app.backendStatus("alice")
                    try await withRunningClient(try TestRedis.configuration, "probe") { redis in
                        let log = RedisKeys(appId: app.appId).user("alice").connectRateLimit
                        let logged = try await redis.send("ZCARD", log).int
                        let token = try await app.token(for: "alice")
                        let refused = try await RawHTTP.get(
                            port: port,
                            path: "/v1/connect?deviceId=laptop&platform=web",
                            headers: [
                                "Authorization": "Bearer \(token)", "Upgrade": "websocket", "Connection": "Upgrade",
                                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
                            ]
                        )
                        #expect(refused.status == 429 && refused.body["error"]["code"] == "RATE_LIMITED", "\(refused)")
                        #expect(try await redis.send("ZCARD", log).int == logged)
                    }
                    let after = try await app.backendStatus("alice")
                    #expect(after["version"] == before["version"])
                    #expect(Set(after["onlineDevices"].array.compactMap { $0["deviceId"].string }) == ["phone", "tablet"])
                }
            }
        }
    }
}
