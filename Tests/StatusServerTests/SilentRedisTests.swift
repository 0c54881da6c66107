import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7 and §9 when Redis goes silent (docs/partitions.md). A redis-server paused with SIGSTOP keeps its sockets
/// open and its kernel takes every byte sent to it, but it answers nothing, as over a network path that drops packets;
/// resumed, it runs whatever it was sent meanwhile, as when such a path comes back. Each test has a server of its own.
@Suite(.redis, .tags(.runsAlone)) struct SilentRedisTests {
    /// A write answered 503 while Redis was silent is answered within 2 s and never applied, even though its bytes
    /// reached the paused server, which runs them when it resumes; an acknowledged write after it stands.
    @Test func aWriteRefusedWhileRedisIsSilentIsAnsweredQuicklyAndNeverApplied() async throws {
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        try await withStatusd(configure: server.install) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            _ = expectOK(try await app.setStatus("alice", "before"))
            _ = expectOK(try await app.setStatus("bob", "before"))
            // The node measures Redis's clock with its first lease renewal, at start.
            try await Task.sleep(for: .milliseconds(300))

            server.pause()
            var refusedAfter: [Duration] = []
            for user in ["alice", "bob"] {
                let started = ContinuousClock.now
                let refused = try await app.setStatus(user, "refused")
                refusedAfter.append(ContinuousClock.now - started)
                expectError(refused, 503, "UNAVAILABLE")
            }
            #expect(refusedAfter.allSatisfy { $0 < .seconds(2) }, "503s took \(refusedAfter)")
            let readyAsked = ContinuousClock.now
            expectError(try await api.raw(.get, "/readyz", key: nil), 503, "UNAVAILABLE")
            #expect(ContinuousClock.now - readyAsked < .seconds(2))
            server.resume()

            // Bob writes again as soon as Redis answers: acknowledged, it must stay; alice's refused write must not land.
            let deadline = ContinuousClock.now + .seconds(10)
            while try await app.setStatus("bob", "after").status != 200 {
                guard ContinuousClock.now < deadline else { throw TestAppError(message: "redis did not come back") }
                try await Task.sleep(for: .milliseconds(50))
            }
            // Whatever the resumed server still held has run by now.
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await app.backendStatus("alice")["customStatus"].string == "before")
            #expect(try await app.backendStatus("bob")["customStatus"].string == "after")
        }
    }

    /// A node that cannot reach Redis for longer than its lease closes its device sockets with 1013, so that they
    /// reconnect through a healthy node, within its lease and 2 s; it does not wait for Redis to come back.
    @Test func aNodeCutOffPastItsLeaseClosesItsDevicesWith1013() async throws {
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        let configure: (inout ServerConfiguration) -> Void = { configuration in
            server.install(in: &configuration)
            configuration.nodeLeaseSeconds = 2
        }
        try await withStatusd(.live, configure: configure) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await withThrowingTaskGroup(of: Void.self) { group in
                let (device, _) = try await app.openDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "d1")) {
                    group.addTask(operation: $0)
                }
                server.pause()
                let paused = ContinuousClock.now
                try await device.waitClosed(timeout: .seconds(6))
                let closedAfter = ContinuousClock.now - paused
                server.resume()
                #expect(device.closeCode == 1013)
                // The lease holds until 2 s after the last renewal was sent (at most a third of it before the pause).
                #expect(closedAfter < .seconds(4), "closed \(closedAfter) after the pause")
                #expect(closedAfter > .milliseconds(1_300), "closed \(closedAfter) after the pause: before the lease could run out")
                group.cancelAll()
            }
        }
    }

    /// Every request reads its app's record, kept 500 ms. When Redis cannot answer a new read, the copy held keeps
    /// serving (on a cluster: while the shard of `{appId}` fails over, only the users on that shard are refused), and
    /// the read is tried again meanwhile; an app never read is refused as before.
    @Test func anAppsRecordServesFromItsCopyWhileRedisCannotBeRead() async throws {
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        try await server.withClient("stale") { redis in
            let registry = AppRegistry(redis: redis, scripts: try ScriptLibrary.load(), clock: SystemNodeClock())
            _ = try await registry.create(appId: "held", config: AppConfig())
            _ = try await registry.create(appId: "unread", config: AppConfig())
            let held = try #require(try await registry.find("held"))
            server.pause()
            defer { server.resume() }
            try await Task.sleep(for: AppRegistry.cacheTTL + .milliseconds(100))
            // The first read after the copy lapsed waits for Redis (the command timeout), then serves the copy...
            #expect(try await registry.find("held")?.apiKeyDigest == held.apiKeyDigest)
            // ...and the next ones serve it at once.
            let started = ContinuousClock.now
            #expect(try await registry.find("held")?.apiKeyDigest == held.apiKeyDigest)
            #expect(ContinuousClock.now - started < .milliseconds(100))
            let uncached = AppRegistry(redis: redis, scripts: try ScriptLibrary.load(), clock: SystemNodeClock())
            await #expect(throws: RedisClientError.self) { _ = try await uncached.find("unread") }
        }
    }
}
