import Foundation
import Testing

@testable import StatusServer

/// The device upgrade read without NIO's HTTP codec (``DeviceUpgradeSniffer``) on real sockets: what a client sends
/// right behind its request reaches its session, a request that arrives in pieces is still taken, a refusal is
/// answered with the SPEC error and closed, and an upgrade with something unusual about it goes through NIO's codec
/// and is upgraded all the same.
@Suite(.redis) struct DeviceUpgradePathTests {
    private static func upgrade(_ token: String, deviceId: String, extra: String = "") -> String {
        "GET /v1/connect?deviceId=\(deviceId)&platform=web HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + "Authorization: Bearer \(token)\r\n\(extra)\r\n"
    }

    /// Reads until `text` has come (at most 5 s); returns everything read.
    private static func read(_ connection: RawConnection, until text: String) async -> String {
        var received = ""
        let deadline = ContinuousClock.now + .seconds(5)
        while !received.contains(text), ContinuousClock.now < deadline {
            received += await connection.readAvailable(timeout: .milliseconds(200))
        }
        return received
    }

    /// A node with an app and its user alice, alice's token, and a raw connection to the node.
    private func withAlice(_ body: @Sendable (APIClient, String, RawConnection) async throws -> Void) async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await body(app, try await app.token(for: "alice"), try RawConnection(port: api.client.port!))
        }
    }

    @Test func aFrameSentWithTheRequestReachesTheSessionAfterTheWelcome() async throws {
        try await withAlice { app, token, connection in
            let frame = RawWebSocket.textFrame(#"{"id":"early","op":"heartbeat"}"#)
            #expect(connection.send(Array(Self.upgrade(token, deviceId: "d1").utf8) + frame))
            let received = await Self.read(connection, until: #""id":"early""#)
            #expect(received.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"), "\(received.prefix(200))")
            #expect(received.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
            let welcome = try #require(received.range(of: #""event":"welcome""#))
            let reply = try #require(received.range(of: #""id":"early""#), "\(received)")
            #expect(welcome.lowerBound < reply.lowerBound)
        }
    }

    @Test func aRequestInPiecesIsTakenOnceWhole() async throws {
        try await withAlice { app, token, connection in
            let request = Array(Self.upgrade(token, deviceId: "d1").utf8)
            // Cut inside the path, then inside the last CR LF CR LF.
            for piece in [request[0..<9], request[9..<(request.count - 2)], request[(request.count - 2)...]] {
                #expect(connection.send(Array(piece)))
                try await Task.sleep(for: .milliseconds(50))
            }
            let received = await Self.read(connection, until: #""event":"welcome""#)
            #expect(received.hasPrefix("HTTP/1.1 101 "), "\(received.prefix(200))")
            try await app.waitUntilConnected("alice", deviceId: "d1")
        }
    }

    @Test func aRefusedUpgradeIsAnsweredWithItsErrorAndClosed() async throws {
        try await withStatusd(.live) { api in
            let response = try await RawHTTP.exchange(port: api.client.port!, Self.upgrade("not-a-token", deviceId: "d1"))
            #expect(response.status == 401, "\(response.text)")
            #expect(response.body["error"]["code"].string == "UNAUTHORIZED")
            #expect(response.header("Connection") == "close")
            #expect(response.closed)
        }
    }

    /// An upgrade whose head never arrives whole is answered 408 with the SPEC error when its time runs out, as any
    /// request is (SPEC §7), not just closed.
    @Test func anUpgradeNeverWholeIsAnswered408() async throws {
        let configure: (inout ServerConfiguration) -> Void = { $0.requestTimeout = .milliseconds(800) }
        try await withStatusd(.live, configure: configure) { api in
            let partial = "GET /v1/connect?deviceId=d&platform=web HTTP/1.1\r\nUpgrade: websocket\r\n"
            let start = ContinuousClock.now
            let response = try await RawHTTP.exchange(port: api.client.port!, partial)
            #expect(response.status == 408, "\(response.text)")
            #expect(response.body["error"]["code"].string == "REQUEST_TIMEOUT")
            #expect(response.closed)
            #expect(ContinuousClock.now - start < .seconds(3))
        }
    }

    /// A request that declares a body, even an empty one, is not for the sniffer: NIO's codec reads it, and the device is
    /// upgraded as ever.
    @Test func anUpgradeTheSnifferDoesNotTakeIsUpgradedByNIOsCodec() async throws {
        try await withAlice { app, token, connection in
            #expect(connection.send(Self.upgrade(token, deviceId: "d1", extra: "Content-Length: 0\r\n")))
            let received = await Self.read(connection, until: #""event":"welcome""#)
            #expect(received.hasPrefix("HTTP/1.1 101 "), "\(received.prefix(200))")
            try await app.waitUntilConnected("alice", deviceId: "d1")
        }
    }
}
