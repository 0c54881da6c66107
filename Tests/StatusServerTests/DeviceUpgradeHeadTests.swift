import NIOCore
import NIOHTTP1
import Testing

@testable import StatusServer

/// ``DeviceUpgradeHead`` takes a plain, well-formed upgrade of the device path and nothing else: every other request,
/// and every upgrade with something unusual about it, goes to NIO's HTTP codec, which answers it as before.
@Suite struct DeviceUpgradeHeadTests {
    private static let upgrade = [
        "GET /v1/connect?deviceId=d1&platform=web HTTP/1.1", "Host: 127.0.0.1", "Upgrade: websocket", "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13", "Authorization: Bearer t0ken",
    ]

    private func parse(_ text: String, maxBytes: Int = 80 * 1024, maxFields: Int = 100) -> DeviceUpgradeHead.Parse {
        parse(Array(text.utf8), maxBytes: maxBytes, maxFields: maxFields)
    }

    private func parse(_ bytes: [UInt8], maxBytes: Int = 80 * 1024, maxFields: Int = 100) -> DeviceUpgradeHead.Parse {
        DeviceUpgradeHead.parse(ByteBuffer(bytes: bytes), maxBytes: maxBytes, maxFields: maxFields)
    }

    private func request(_ lines: [String]) -> String {
        lines.joined(separator: "\r\n") + "\r\n\r\n"
    }

    @Test func aPlainUpgradeIsTakenWithItsTargetAndHeaders() throws {
        // A frame sent right behind the request is not part of its head.
        let bytes = Array(request(Self.upgrade).utf8) + [0x81, 0x00]
        guard case .upgrade(let head, let length) = parse(bytes) else {
            Issue.record("not taken: \(parse(bytes))")
            return
        }
        #expect(length == bytes.count - 2)
        #expect(head.method == .GET && head.version == .http1_1)
        #expect(head.uri == "/v1/connect?deviceId=d1&platform=web")
        #expect(head.headers["Authorization"] == ["Bearer t0ken"])
        #expect(head.headers["sec-websocket-key"] == ["dGhlIHNhbXBsZSBub25jZQ=="])
        #expect(head.headers.count == Self.upgrade.count - 1)
        // Spaces and tabs around a value are not part of it.
        var spaced = Self.upgrade
        spaced[6] = "Authorization:  \tBearer t0ken \t"
        guard case .upgrade(let trimmed, _) = parse(request(spaced)) else {
            Issue.record("not taken with spaces around a value")
            return
        }
        #expect(trimmed.headers["Authorization"] == ["Bearer t0ken"])
    }

    @Test func aHeadNotWholeYetAsksForMoreAndOtherRequestsAreHandedOver() {
        let whole = Array(request(Self.upgrade).utf8)
        for cut in [1, 4, 15, 16, 60, whole.count - 2, whole.count - 1] {
            #expect(parse(Array(whole.prefix(cut))) == .needMore, "cut at \(cut)")
        }
        for other in ["POST /v1/apps HTTP/1.1\r\n", "GET /healthz HTTP/1.1\r\n", "GET /v1/connectx HTTP/1.1\r\n", "get /v1/connect?"] {
            #expect(parse(other) == .elsewhere, "\(other)")
        }
        // A head larger than NIO's decoder allows is NIO's to refuse, whole or not yet.
        #expect(parse(whole, maxBytes: 100) == .elsewhere)
        #expect(parse(Array(whole.prefix(150)), maxBytes: 100) == .elsewhere)
        #expect(parse(whole, maxFields: 3) == .elsewhere)
    }

    /// Each of these is handed over: malformed, unusual, or an upgrade refused for its headers. NIO's codec and the
    /// upgrader answer them as they always did (400, 405, 404, plain HTTP).
    @Test(arguments: [
        "a bare LF", "a folded line", "a space before the colon", "no colon", "an empty name", "a control byte in a value",
        "a byte past ASCII in a value", "a body", "a chunked body", "HTTP/1.0", "a space in the target", "no Upgrade header",
        "another protocol", "no Connection: upgrade", "two keys", "a key of the wrong size", "version 8",
    ])
    func anUnusualUpgradeIsHandedOver(_ what: String) throws {
        var lines = Self.upgrade
        switch what {
        case "a bare LF": lines[1] = "Host: 127.0.0.1\nX-Other: 1"
        case "a folded line": lines.insert(" folded", at: 2)
        case "a space before the colon": lines[1] = "Host : 127.0.0.1"
        case "no colon": lines[1] = "Host 127.0.0.1"
        case "an empty name": lines[1] = ": 127.0.0.1"
        case "a control byte in a value": lines[1] = "Host: 127.0.0.1\u{1}"
        case "a byte past ASCII in a value": lines[1] = "Host: café"
        case "a body": lines.append("Content-Length: 5")
        case "a chunked body": lines.append("Transfer-Encoding: chunked")
        case "HTTP/1.0": lines[0] = "GET /v1/connect?deviceId=d1 HTTP/1.0"
        case "a space in the target": lines[0] = "GET /v1/connect?a b HTTP/1.1"
        case "no Upgrade header": lines.remove(at: 2)
        case "another protocol": lines[2] = "Upgrade: h2c"
        case "no Connection: upgrade": lines[3] = "Connection: keep-alive"
        case "two keys": lines.append("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==")
        case "a key of the wrong size": lines[4] = "Sec-WebSocket-Key: c2hvcnQ="
        case "version 8": lines[5] = "Sec-WebSocket-Version: 8"
        default: throw TestAppError(message: "no such case: \(what)")
        }
        #expect(parse(request(lines)) == .elsewhere, "\(what)")
    }
}
