import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.7: a call refused by a gate, a rate limit or a batch limit costs Redis no more than the check that refused
/// it, no reads or writes of its targets. Counted by Redis itself (`INFO commandstats`, which counts the commands
/// scripts run too) around refused calls of 100 ids: the check reads the caller's own keys (and the app record when
/// its cache lapsed), one or two commands of a kind (a few more when the node's housekeeping runs meanwhile), where
/// touching the targets would be a hundred. Counted on a redis-server of the test's own: the shared one counts every
/// test running meanwhile.
@Suite(.redis) struct RefusalCostTests {
    @Test func refusedCallsOf100IdsTouchNoTarget() async throws {
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        try await withStatusd(configure: server.install) { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 1, "windowSeconds": 60]])
            let targets = (0..<100).map { "t\($0)" }
            try await app.createUsers(["alice"] + targets)
            try await server.withClient("probe") { redis in
                @Sendable func counts() async throws -> [String: Int] { try await Self.commandCounts(redis) }
                @Sendable func targetWork(during call: () async throws -> APIResponse) async throws -> (APIResponse, [String: Int]) {
                    let before = try await counts()
                    let response = try await call()
                    let after = try await counts()
                    var delta: [String: Int] = [:]
                    for command in ["exists", "zadd", "hmget", "hget", "sadd", "zrem"] {
                        let ran = after[command, default: 0] - before[command, default: 0]
                        // The node's own housekeeping runs meanwhile (a few commands); touching the targets is 100.
                        if ran >= 10 { delta[command] = ran }
                    }
                    return (response, delta)
                }
                #expect(try await counts()["hmget", default: 0] > 0, "commandstats could not be read")
                // Each operation once, accepted: the caller's window is then full.
                _ = expectOK(try await app.subscribe("alice", targets))
                _ = expectOK(try await app.query("alice", targets))
                let (subscribe, subscribeWork) = try await targetWork { try await app.subscribe("alice", targets) }
                expectError(subscribe, 429, "RATE_LIMITED")
                #expect(subscribeWork.isEmpty, "a refused subscribe ran \(subscribeWork)")
                let (query, queryWork) = try await targetWork { try await app.query("alice", targets) }
                expectError(query, 429, "RATE_LIMITED")
                #expect(queryWork.isEmpty, "a refused getUserStatus ran \(queryWork)")
                // Refused by the batch limit and by the gates: nothing at all.
                let (tooMany, batchWork) = try await targetWork { try await app.subscribe("alice", targets + ["t100"]) }
                expectError(tooMany, 400, "TOO_MANY_USERS")
                #expect(batchWork.isEmpty)
                _ = try await app.patchConfig(["statusQuery": false])
                let (gated, gateWork) = try await targetWork { try await app.query("alice", targets) }
                expectError(gated, 403, "FEATURE_DISABLED")
                #expect(gateWork.isEmpty)
            }
        }
    }
}

extension RefusalCostTests {
    /// Calls per command name since the server started, as `INFO commandstats` counts them (scripts' commands too).
    static func commandCounts(_ redis: RedisClient) async throws -> [String: Int] {
        let info = try await redis.send("INFO", "commandstats").string ?? ""
        var result: [String: Int] = [:]
        for line in info.split(separator: "\r\n") where line.hasPrefix("cmdstat_") {
            let name = line.dropFirst("cmdstat_".count).prefix { $0 != ":" }
            // "cmdstat_<name>:calls=<n>,usec=...": the first field.
            let calls = line.split(separator: ":").last?.split(separator: ",").first?.dropFirst("calls=".count) ?? "0"
            result[String(name)] = Int(calls) ?? 0
        }
        return result
    }

    /// SPEC §7: a refused request changes nothing. setSelfStatus with `clearAfterSeconds` for a user who does not exist
    /// is `USER_NOT_FOUND` and writes no expiry entry, nor lists the app among those with expiries.
    @Test func aSetSelfStatusForAnUnknownUserWritesNothing() async throws {
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        try await withStatusd(configure: server.install) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await server.withClient("probe") { redis in
                let before = try await Self.commandCounts(redis)
                for _ in 0..<10 {
                    let refused = try await app.call(.put, "/users/nobody/status", ["customStatus": "x", "clearAfterSeconds": 60])
                    expectError(refused, 404, "USER_NOT_FOUND")
                }
                let after = try await Self.commandCounts(redis)
                // The node's own lease renewal may run a ZADD meanwhile; each refused call would add one of each.
                for command in ["zadd", "sadd", "hset", "hdel"] {
                    let ran = after[command, default: 0] - before[command, default: 0]
                    #expect(ran <= 2, "\(command) ran \(ran) times for 10 refused requests")
                }
                let keys = RedisKeys(appId: app.appId)
                #expect(try await redis.send("EXISTS", keys.expiries).int == 0)
                #expect(try await redis.send("EXISTS", keys.user("nobody").status).int == 0)
                #expect(try await redis.send("ZSCORE", RedisKeys.expiringApps.scores, app.appId).isNull)
            }
        }
    }
}

extension RefusalCostTests {
    /// SPEC §10.6 and §10.7: a WebSocket connect refused by `connectRateLimit` stores nothing and subscribes to nothing:
    /// no session on the node's device list, no relationship load, no bus channel, no app-wide mark; only the check.
    @Test func aConnectRefusedByTheRateLimitStoresAndSubscribesNothing() async throws {
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        try await withStatusd(.live, configure: server.install) { api in
            let app = try await api.createApp(config: [
                "plan": "premium", "statusQuery": true, "connectRateLimit": ["calls": 1, "windowSeconds": 60],
            ])
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("alice", ["bob"]))
            expectOK(try await app.login("alice", "d1"))
            let token = try await app.token(for: "alice")
            try await server.withClient("probe") { redis in
                let before = try await Self.commandCounts(redis)
                for attempt in 0..<5 {
                    let refused = try await RawHTTP.get(
                        port: try #require(api.client.port),
                        path: "/v1/connect?deviceId=w\(attempt)&platform=web&presence=all",
                        headers: [
                            "Authorization": "Bearer \(token)", "Upgrade": "websocket", "Connection": "Upgrade",
                            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
                        ]
                    )
                    #expect(refused.status == 429 && refused.body["error"]["code"] == "RATE_LIMITED", "\(refused)")
                }
                let after = try await Self.commandCounts(redis)
                // Commands only a connect runs here (the node's housekeeping reads and renews meanwhile): a session's
                // channels, its node's device list, its relationships. Each refused connect ran each of them.
                for command in ["ssubscribe", "sadd", "srem", "sunion"] {
                    let ran = after[command, default: 0] - before[command, default: 0]
                    #expect(ran == 0, "\(command) ran \(ran) times for 5 refused connects")
                }
            }
        }
    }
}
