import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// A node with as many device upgrades pending as `--max-pending-connects` allows refuses the next one at once with
/// 503 and `Retry-After`, instead of queueing it behind the others until its request timeout closes it unanswered
/// (``UpgradeAdmission``). The pending upgrade is held for real: its Redis is paused (SIGSTOP), so its connect waits
/// for the command timeout.
@Suite(.redis, .tags(.runsAlone)) struct UpgradeOverloadTests {
    @Test func anUpgradePastThePendingBoundIsRefusedAtOnceWith503AndRetryAfter() async throws {
        let server = try await PrivateRedis.start()
        defer { server.stop() }
        let configure: (inout ServerConfiguration) -> Void = { configuration in
            server.install(in: &configuration)
            configuration.maxPendingConnects = 1
        }
        try await withStatusd(.live, configure: configure) { api in
            let port = api.client.port!
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            let aliceToken = try await app.token(for: "alice")
            let bobToken = try await app.token(for: "bob")

            server.pause()
            // Alice's upgrade waits for the silent Redis: it is the one pending.
            async let held = RawHTTP.exchange(port: port, Self.upgrade(token: aliceToken, deviceId: "a1"), timeout: .seconds(8))
            try await Task.sleep(for: .milliseconds(300))
            let asked = ContinuousClock.now
            let refused = try await RawHTTP.exchange(port: port, Self.upgrade(token: bobToken, deviceId: "b1"), timeout: .seconds(5))
            let refusedAfter = ContinuousClock.now - asked
            #expect(refused.status == 503, "\(refused.text)")
            #expect(refused.body["error"]["code"].string == "UNAVAILABLE", "\(refused.text)")
            #expect(refused.text.lowercased().contains("\r\nretry-after: 1\r\n"), "\(refused.text)")
            #expect(refused.closed)
            #expect(refusedAfter < .seconds(1), "refused after \(refusedAfter): it waited behind the pending upgrade")
            // The held upgrade is answered too (Redis past its command timeout: 503), not closed unanswered.
            let heldAnswer = try await held
            #expect(heldAnswer.status == 503, "\(heldAnswer.text)")
            server.resume()

            // Its place is free again: bob connects once Redis answers.
            let deadline = ContinuousClock.now + .seconds(10)
            var answer = 0
            while answer != 101, ContinuousClock.now < deadline {
                answer = try await RawHTTP.exchange(port: port, Self.upgrade(token: bobToken, deviceId: "b2"), timeout: .seconds(1)).status
                if answer != 101 { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(answer == 101)
        }
    }

    private static func upgrade(token: String, deviceId: String) -> String {
        "GET /v1/connect?deviceId=\(deviceId)&platform=web HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer \(token)\r\n\r\n"
    }
}
