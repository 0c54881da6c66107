import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import StatusCore
import Testing

@testable import StatusServer

/// The handshake fields of the device upgrade (RFC 6455 §4.2), worked on bytes by ``DeviceUpgrader`` and ``Base64``,
/// checked against Foundation's base64 and a plain SHA-1, and the upgrade's checks (``DeviceUpgrader/problem(with:)``).
@Suite struct DeviceUpgraderTests {
    @Test func theAcceptOfRFC6455sExampleIsItsOwn() {
        #expect(DeviceUpgrader.accept(Self.upgrade(key: "dGhlIHNhbXBsZSBub25jZQ==")) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func theAcceptOfAnyKeyIsFoundationsBase64OfItsSHA1() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let key = Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
            let expected = Data(Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
                .base64EncodedString()
            #expect(DeviceUpgrader.accept(Self.upgrade(key: key)) == expected)
        }
    }

    @Test func base64OfEveryLengthIsFoundations() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            var buffer = ByteBuffer()
            bytes.withUnsafeBytes { Base64.write($0, into: &buffer) }
            #expect(String(buffer: buffer) == Data(bytes).base64EncodedString())
        }
    }

    /// A key is valid exactly when it is the canonical base64 of 16 bytes: the same answer as decoding it with
    /// Foundation and encoding it again, for every key of 16 random bytes and for keys one character away from one.
    @Test func aKeyIsValidExactlyWhenItIsTheCanonicalBase64Of16Bytes() {
        func foundation(_ key: String) -> Bool {
            guard let bytes = Data(base64Encoded: key) else { return false }
            return bytes.count == 16 && bytes.base64EncodedString() == key
        }
        var generator = SystemRandomNumberGenerator()
        let characters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ .é")
        var valid = 0
        for _ in 0..<500 {
            var key = Array(Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString())
            if Bool.random(using: &generator) {
                key[Int.random(in: 0..<key.count, using: &generator)] = characters.randomElement(using: &generator)!
            }
            let text = String(key)
            #expect(DeviceUpgrader.isValidKey(text) == foundation(text), "\(text)")
            if foundation(text) { valid += 1 }
        }
        #expect(valid > 250)
        for key in ["", "dGhlIHNhbXBsZSBub25jZQ=", "dGhlIHNhbXBsZSBub25jZR==", "dGhlIHNhbXBsZSBub25jZQ===", "dGhlIHNhbXBsZSBub25jZQ"] {
            #expect(DeviceUpgrader.isValidKey(key) == foundation(key), "\(key)")
        }
        #expect(!DeviceUpgrader.isValidKey("dGhlIHNhbXBsZSBub25jZR=="))
    }

    @Test func anUpgradeOfTheDevicePathHasNoProblem() {
        #expect(DeviceUpgrader.problem(with: Self.upgrade()) == nil)
        #expect(DeviceUpgrader.problem(with: Self.upgrade(uri: "/v1/connect?token=t&x=1")) == nil)
        #expect(DeviceUpgrader.problem(with: Self.upgrade(fields: [("connection", "keep-alive, UPGRADE")])) == nil)
    }

    @Test func eachBrokenRuleIsAnsweredItsError() {
        var post = Self.upgrade()
        post.method = .POST
        #expect(DeviceUpgrader.problem(with: post)?.code == .methodNotAllowed)
        #expect(DeviceUpgrader.problem(with: Self.upgrade(uri: "/v1/connected"))?.code == .notFound)
        #expect(DeviceUpgrader.problem(with: Self.upgrade(uri: "/v1/connec?token=t"))?.code == .notFound)
        #expect(DeviceUpgrader.problem(with: Self.upgrade(key: "not a key"))?.code == .invalidRequest)
        let broken: [[(String, String)]] = [
            [("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")],
            [("Sec-WebSocket-Version", "13")],
            [("Sec-WebSocket-Version", "8")],
            [("Connection", "keep-alive")],
            [("Upgrade", "h2c")],
        ]
        for fields in broken {
            let head = Self.upgrade(fields: fields)
            #expect(DeviceUpgrader.problem(with: head)?.code == .invalidRequest, "\(fields)")
        }
    }

    /// A plain upgrade of `/v1/connect`, with `fields` in place of (or, for a name sent again, beside) its own.
    static func upgrade(
        uri: String = "/v1/connect?token=t",
        key: String = "dGhlIHNhbXBsZSBub25jZQ==",
        fields: [(String, String)] = []
    ) -> HTTPRequestHead {
        var headers: HTTPHeaders = [
            "Host": "example", "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": key,
            "Sec-WebSocket-Version": "13",
        ]
        for (name, value) in fields {
            if name == "Sec-WebSocket-Key" || name == "Sec-WebSocket-Version" && value == "13" {
                headers.add(name: name, value: value)
            } else {
                headers.replaceOrAdd(name: name, value: value)
            }
        }
        return HTTPRequestHead(version: .http1_1, method: .GET, uri: uri, headers: headers)
    }
}
