import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §6 rule 4 and §10.7: a `presence=all` or `roles:` device on a basic plan, or with `statusQuery` off, hears
/// nothing about others, so its node subscribes to none of the app's slot channels and marks nothing (no app-wide
/// log of changes is written for it); the config switched on brings it in line within a second, and off again drops
/// the channels.
@Suite(.redis) struct ScopeGatingTests {
    @Test func anAppWideScopeWithoutTheFeatureListensToNothing() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["plan": "basic"])
            try await app.createUsers(["watcher", "alice"])
            try await withRunningClient(try TestRedis.configuration, "probe") { redis in
                let channel = BusChannels.appSlot(app.appId, ofUser: "alice")
                let mark = RedisKeys(appId: app.appId).appWideListeners
                @Sendable func listeners() async throws -> Int64 {
                    let reply = try await redis.send("PUBSUB", "SHARDNUMSUB", channel)
                    return reply.array?.last?.int ?? -1
                }
                try await app.withDevice(port: api.client.port!, userId: "watcher", DeviceOptions(deviceId: "w1", presence: "all")) { device, _ in
                    #expect(try await listeners() == 0)
                    #expect(try await redis.send("EXISTS", mark).int == 0)
                    _ = try await app.patchConfig(["plan": "premium", "statusQuery": true])
                    let deadline = ContinuousClock.now + .seconds(1)
                    while try await listeners() == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
                    #expect(try await listeners() == 1)
                    #expect(try await redis.send("EXISTS", mark).int == 1)
                    _ = try await app.setStatus("alice", "heard")
                    let event = try await device.next { $0["event"].string == "onUserStatusChanged" && $0["statuses"][0]["userId"] == "alice" }
                    #expect(event["statuses"][0]["customStatus"] == "heard")
                    _ = try await app.patchConfig(["statusQuery": false])
                    // Off, nothing more is delivered within the app cache's second (SPEC §3: the config decides each
                    // delivery); dropping the channels is the node's upkeep of its subscriptions, given 3 s on a machine
                    // as loaded as the whole CI.
                    let off = ContinuousClock.now + .seconds(3)
                    while try await listeners() == 1, ContinuousClock.now < off { try await Task.sleep(for: .milliseconds(20)) }
                    #expect(try await listeners() == 0)
                }
            }
        }
    }
}
