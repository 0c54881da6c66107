import Foundation
import RedisClient
import Testing

@testable import StatusServer

/// `lib.lua`'s status record (`open_status`, `status_put`, `status_flush`): a script that changes a user's status reads
/// the status hash once and writes it in one `HSET` and at most one `HDEL`, whatever the change: it never reads back
/// what it wrote, nor writes one field at a time. A connect, a device's state, a custom status, an invisible user's
/// availability and a departure are counted from inside Redis, on a server of the test's own: `SLOWLOG` with a
/// threshold of 0 logs the commands a script runs (client `?:0`) just before the script's own call.
@Suite(.redis) struct StatusHashAccessTests {
    @Test func eachStatusChangeReadsTheStatusHashOnceAndWritesItOnce() async throws {
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        try await withStatusd(.live, configure: server.install) { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true])
            try await app.createUsers(["alice"])
            let status = RedisKeys(appId: app.appId).user("alice").status
            let port = try #require(api.client.port)
            try await server.withClient("status-hash") { redis in
                try await ReconnectFastPathTests.startLoggingCommands(redis)
                try await app.withDevice(port: port, userId: "alice", DeviceOptions(deviceId: "phone")) { device, _ in
                    let reply = try await device.request("setDeviceState", ["state": "idle"])
                    #expect(reply["result"]["onlineDevices"][0]["state"] == "idle")
                    expectOK(try await app.setStatus("alice", "lunch"))
                    expectOK(try await app.call(.put, "/users/alice/status", ["availability": "invisible"]))
                }
                try await waitForDeparture(of: status, redis)
                let calls = try await Self.scriptCalls(redis).filter { $0.contains { $0.dropFirst().first == status } }
                // The connect, the device's state, the custom status, the availability and the departure.
                #expect(calls.count >= 5, "\(calls)")
                for call in calls {
                    let onStatus = call.filter { $0.dropFirst().first == status }.map { $0[0].uppercased() }
                    let reads = onStatus.filter { ["HMGET", "HGET", "HGETALL", "HEXISTS"].contains($0) }.count
                    #expect(reads <= 1, "\(onStatus)")
                    #expect(onStatus.filter { $0 == "HSET" }.count <= 1, "\(onStatus)")
                    #expect(onStatus.filter { $0 == "HDEL" }.count <= 1, "\(onStatus)")
                    #expect(!onStatus.contains("HINCRBY"), "\(onStatus)")
                }
            }
        }
    }

    /// Waits until the user's status says `offline`: the departure's script has run.
    private func waitForDeparture(of status: String, _ redis: RedisClient) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while try await redis.send("HGET", status, "t").string != "offline" {
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "alice never went offline") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The commands each script call ran since the log started, oldest call first: the run of commands logged by the
    /// scripts' client (`?:0`) just before each `EVALSHA`.
    static func scriptCalls(_ redis: RedisClient) async throws -> [[[String]]] {
        let entries = try await redis.send("SLOWLOG", "GET", "-1").array ?? []
        var calls: [[[String]]] = []
        var inside: [[String]] = []
        for entry in entries.reversed() {
            guard let fields = entry.array, fields.count >= 5 else { continue }
            let command = (fields[3].array ?? []).map { $0.string ?? "" }
            if fields[4].string == "?:0" {
                inside.append(command)
            } else {
                if command.first?.uppercased() == "EVALSHA" { calls.append(inside) }
                inside = []
            }
        }
        return calls
    }
}
