import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7 and §9 under faults injected for real: silent peers, peers that break the protocol, a dropped bus
/// connection, a stalled node. Every session ends with its TCP connection closed, and nothing is lost.
@Suite(.redis) struct LivenessTests {
    /// The timeout is the node's own time (its housekeeping's ticks, the session's last sign of life): the test moves
    /// the node's clock, so a busy machine delays the node's work but cannot stretch or shrink the timeout.
    @Test func aSilentDeviceGoesOfflineWithinItsTimeoutAndItsSocketIsClosed() async throws {
        let clock = ManualNodeClock()
        try await withStatusd(.live, configure: clock.install) { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "heartbeatTimeoutSeconds": 5])
            try await app.createUsers(["ghost", "watcher"])
            _ = try await app.call(.post, "/users/watcher/subscriptions", ["userIds": ["ghost"]])
            try await app.withDevice(port: api.client.port!, userId: "watcher", DeviceOptions(deviceId: "w1")) { watcher, _ in
                // Connects, then neither reads nor sends anything: a phone whose network vanished.
                let silent = try RawWebSocket(
                    port: api.client.port!,
                    path: "/v1/connect?deviceId=g1&platform=ios",
                    token: try await app.token(for: "ghost")
                )
                #expect(try await watcher.nextStatus(of: "ghost")["statusType"].string == "online")
                // Short of the timeout the ghost stays online; the watcher heartbeats (the timeout applies to it too).
                try await clock.step(by: .milliseconds(4500))
                try await watcher.send(["id": "hb", "op": "heartbeat"])
                #expect(try await watcher.statusEvents(of: "ghost", settle: .milliseconds(200)).isEmpty, "offline before its timeout")
                // Half a second past it, on the node's clock: the node gives up on the ghost without more of its time
                // passing, and closes the TCP connection itself, after its close frame (1001, going away), within 2 s.
                try await clock.step(by: .seconds(1))
                let offline = try await watcher.nextStatus(of: "ghost", timeout: .seconds(5))
                #expect(offline["statusType"].string == "offline")
                async let closed = silent.readUntilClosed(timeout: .seconds(5))
                try await clock.step(by: .seconds(2))
                #expect(Self.closeCode(in: try await closed) == 1001)
            }
        }
    }

    @Test func unmaskedFramesAndInvalidUTF8CloseTheSocketWithTheirCodes() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let token = try await app.token(for: "alice")
            let unmasked = try RawWebSocket(port: api.client.port!, path: "/v1/connect?deviceId=d1&platform=web", token: token)
            try await app.waitUntilConnected("alice", deviceId: "d1")
            try unmasked.send(RawWebSocket.textFrame(#"{"id":"1","op":"heartbeat"}"#, masked: false))
            let closed = try await unmasked.readUntilClosed(timeout: .seconds(3))
            #expect(Self.closeCode(in: closed) == 1002)

            let garbled = try RawWebSocket(port: api.client.port!, path: "/v1/connect?deviceId=d2&platform=web", token: token)
            try await app.waitUntilConnected("alice", deviceId: "d2")
            var frame = RawWebSocket.textFrame("{\"id\":\"1\"}")
            frame[6] ^= 0xFF  // the first payload byte becomes 0x84: not UTF-8
            try garbled.send(frame)
            #expect(Self.closeCode(in: try await garbled.readUntilClosed(timeout: .seconds(3))) == 1007)
            // Both devices went away like any dropped socket.
            try await Task.sleep(for: .milliseconds(300))
            let status = try await app.call(.post, "/status/query", ["userIds": ["alice"]])
            #expect(status.body["statuses"][0]["statusType"].string == "offline")
        }
    }

    @Test func aKickedDeviceThatNeverReadsIsClosedWithinTwoSeconds() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let device = try RawWebSocket(
                port: api.client.port!,
                path: "/v1/connect?deviceId=d1&platform=web",
                token: try await app.token(for: "alice")
            )
            try await app.waitUntilConnected("alice", deviceId: "d1")
            let kicked = try await app.call(.post, "/users/alice/kick", [:])
            #expect(kicked.body["kicked"] == ["d1"])
            let bytes = try await device.readUntilClosed(timeout: .seconds(2))
            #expect(String(decoding: bytes, as: UTF8.self).contains(#""event":"kicked""#))
        }
    }

    @Test func aSocketMayNotSendMoreThanItsRequestBurst() async throws {
        // The burst refills with the node's time: a clock that stands still while the 140 requests arrive, however
        // slowly a busy machine delivers them.
        let clock = ManualNodeClock()
        try await withStatusd(.live, configure: clock.install) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "d1")) { device, _ in
                for index in 0..<140 { try await device.send(["id": .string("h\(index)"), "op": "heartbeat"]) }
                var limited = 0
                var answered = 0
                for index in 0..<140 {
                    let reply = try await device.next(timeout: .seconds(5)) { $0["id"].string == "h\(index)" }
                    answered += 1
                    if reply["error"]["code"].string == "RATE_LIMITED" {
                        limited += 1
                        #expect((reply["error"]["retryAfterMs"].int ?? 0) > 0)
                    }
                }
                #expect(answered == 140)
                #expect(limited >= 30, "only \(limited) of 140 requests sent at once were limited (burst 100)")
                #expect(limited <= 40)
            }
        }
    }

    @Test func changesPublishedWhileTheBusConnectionIsDownStillArrive() async throws {
        try await expectConvergence(customStatus: "changed") { redis, nodeId, app, targets in
            // The node's bus connection drops; every target changes right after, while it reconnects.
            #expect(try await BusFault.killBusConnections(of: nodeId, using: redis) > 0)
            for target in targets {
                _ = try await app.call(.put, "/users/\(target)/status", ["customStatus": "changed"])
            }
        }
    }

    @Test func aNodeWhoseBusInboxOverflowsStillConverges() async throws {
        let tinyInbox: (inout ServerConfiguration) -> Void = { $0.busInboxLimit = 4 }
        try await expectConvergence(customStatus: "flooded", configure: tinyInbox) { redis, _, app, targets in
            // A flood of bus messages about another app, pipelined with the real changes.
            let noise = #"{"configChanged":{"appId":"flood-noise"}}"#
            for target in targets {
                _ = try await redis.pipeline(Array(repeating: ["PUBLISH", BusChannels.control, noise], count: 200))
                _ = try await app.call(.put, "/users/\(target)/status", ["customStatus": "flooded"])
            }
        }
    }

    /// A device watching 20 users; `fault` runs with a Redis client of its own and the node's id, and changes every
    /// target's custom status to `customStatus`; within 3 s the device must have heard the new status of every one.
    private func expectConvergence(
        customStatus: String,
        configure: @escaping (inout ServerConfiguration) -> Void = { _ in },
        fault: @escaping @Sendable (RedisClient, String, APIClient, [String]) async throws -> Void
    ) async throws {
        let nodeId = BusFault.nodeId("converge")
        let named: (inout ServerConfiguration) -> Void = { configuration in
            configure(&configuration)
            configuration.nodeId = nodeId
        }
        try await withStatusd(.live, configure: named) { api in
            let app = try await api.createApp(config: premiumConfig)
            let targets = (0..<20).map { "t\($0)" }
            try await app.createUsers(["watcher"] + targets)
            _ = try await app.call(.post, "/users/watcher/subscriptions", ["userIds": .array(targets.map(JSONValue.string))])
            try await app.withDevice(port: api.client.port!, userId: "watcher", DeviceOptions(deviceId: "w1")) { watcher, _ in
                try await withRunningClient(try TestRedis.configuration, "fault") { redis in
                    try await fault(redis, nodeId, app, targets)
                }
                var converged: Set<String> = []
                let deadline = ContinuousClock.now + .seconds(3)
                while converged.count < targets.count, ContinuousClock.now < deadline {
                    let event = try await watcher.next(timeout: .seconds(3)) { $0["event"].string == "onUserStatusChanged" }
                    let status = event["statuses"][0]
                    if status["customStatus"].string == customStatus, let userId = status["userId"].string { converged.insert(userId) }
                }
                #expect(converged.count == targets.count, "\(targets.count - converged.count) targets never converged")
            }
        }
    }

    @Test(.tags(.runsAlone)) func aStalledNodeFilesItsLiveDevicesOnlineAgain() async throws {
        let adminKey = "admin-" + UUID().uuidString
        let shortLease: (inout ServerConfiguration) -> Void = { $0.nodeLeaseSeconds = 3 }
        try await withStatusd(.live, adminKey: adminKey, configure: shortLease) { api in
            let node = try await ChildNode(adminKey: adminKey, nodeId: "stall-" + UUID().uuidString.prefix(8).lowercased(), leaseSeconds: 3)
            defer { node.crash() }
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            try await app.withDevice(port: node.port, userId: "alice", DeviceOptions(deviceId: "a1")) { _, _ in
                node.pause()
                // The survivor files alice's device gone once the stalled node's lease expires.
                var status = ""
                let stalled = ContinuousClock.now
                while status != "offline", ContinuousClock.now - stalled < .seconds(10) {
                    try await Task.sleep(for: .milliseconds(200))
                    status = try await app.call(.post, "/status/query", ["userIds": ["alice"]]).body["statuses"][0]["statusType"].string ?? ""
                }
                #expect(status == "offline")
                // SPEC §9: no device stays connected to a node that shows it offline for more than its lease + 2 s. Her
                // socket never closed, so from the moment she was seen offline she is online again within that.
                let seenOffline = ContinuousClock.now
                node.resume()
                while status != "online", ContinuousClock.now - seenOffline < .seconds(5) {
                    try await Task.sleep(for: .milliseconds(200))
                    status = try await app.call(.post, "/status/query", ["userIds": ["alice"]]).body["statuses"][0]["statusType"].string ?? ""
                }
                #expect(status == "online")
                #expect(ContinuousClock.now - seenOffline <= .seconds(5), "lease 3 s + 2 s")
            }
        }
    }

    @Test func idleHTTPConnectionsAreClosed() async throws {
        let shortIdle: (inout ServerConfiguration) -> Void = { $0.httpIdleTimeoutSeconds = 1 }
        try await withStatusd(.live, configure: shortIdle) { api in
            // A connection that never sends a byte.
            let silent = try RawWebSocket(port: api.client.port!, sending: nil)
            #expect(try await silent.readUntilClosed(timeout: .seconds(3)).isEmpty)
            // A keep-alive connection idle after its request.
            let idle = try RawWebSocket(port: api.client.port!, sending: "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let answer = try await idle.readUntilClosed(timeout: .seconds(3))
            #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        }
    }

    /// The code of the last close frame in bytes read from the server (2-byte header, then the code).
    static func closeCode(in bytes: [UInt8]) -> UInt16? {
        guard let start = bytes.lastIndex(of: 0x88), start + 3 < bytes.count else { return nil }
        return UInt16(bytes[start + 2]) << 8 | UInt16(bytes[start + 3])
    }
}
