import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A client on a plain TCP socket that does only what a test tells it: the upgrade handshake, then nothing at all
/// unless asked (it neither reads nor answers), or frames that break the protocol on purpose. For the faults a real
/// WebSocket client would never produce: a silent peer, a peer that never reads, unmasked frames.
final class RawWebSocket: @unchecked Sendable {
    // @unchecked: one test uses a socket, one call at a time.
    private let fd: Int32

    /// Connects and sends the upgrade request; reads nothing.
    convenience init(port: Int, path: String, token: String) throws {
        let request =
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer \(token)\r\n\r\n"
        try self.init(port: port, sending: request)
    }

    /// Connects and sends `request` (nothing when nil); reads nothing.
    init(port: Int, sending request: String?) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestAppError(message: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw TestAppError(message: "connect() failed")
        }
        if let request { try send(Array(request.utf8)) }
    }

    deinit {
        close(fd)
    }

    /// Sends raw bytes.
    func send(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw TestAppError(message: "send() failed") }
    }

    /// A client text frame, masked as RFC 6455 requires, or unmasked to break it.
    static func textFrame(_ text: String, masked: Bool = true) -> [UInt8] {
        let payload = Array(text.utf8)
        precondition(payload.count < 126)
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        var frame: [UInt8] = [0x81, UInt8(payload.count) | (masked ? 0x80 : 0)]
        if masked {
            frame += mask
            frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        } else {
            frame += payload
        }
        return frame
    }

    /// Reads everything the server sends until it closes the connection; throws if it is still open after `timeout`.
    /// Returns the bytes read.
    func readUntilClosed(timeout: Duration) async throws -> [UInt8] {
        try await onOwnThread { try self.readUntilClosedBlocking(timeout: timeout) }
    }

    private func readUntilClosedBlocking(timeout: Duration) throws -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw TestAppError(message: "the server did not close the connection within \(timeout)") }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
            guard poll(&descriptor, 1, max(1, milliseconds)) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return received }
            received += buffer[0..<count]
        }
    }
}
