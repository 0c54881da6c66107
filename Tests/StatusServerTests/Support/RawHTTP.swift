import Foundation
import StatusCore

#if canImport(Glibc)
import Glibc
#endif

/// HTTP/1.1 over a plain TCP socket, byte for byte as a test writes it: for the requests a real client never sends
/// (empty path segments as typed, slow or unfinished bodies, refused upgrades that must close the connection).
enum RawHTTP {
    /// One request without a body, read until the server closes (or 5 s pass).
    static func get(port: Int, path: String, headers: [String: String], method: String = "GET") async throws -> (status: Int, body: JSONValue) {
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        let response = try await exchange(port: port, request)
        return (response.status, response.body)
    }

    /// Sends `request` as is and reads until the server closes or `timeout` passes.
    static func exchange(port: Int, _ request: String, timeout: Duration = .seconds(5)) async throws -> RawResponse {
        let connection = try RawConnection(port: port)
        _ = connection.send(Array(request.utf8))
        return await connection.readResponse(timeout: timeout)
    }
}

/// Runs blocking socket work on a thread of its own and awaits it: a test waiting on a socket must not hold one of the
/// few threads that every test running in parallel (and the server under test) share.
func onOwnThread<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// ``onOwnThread(_:)`` for work that cannot fail.
func onOwnThread<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

/// What came back on a raw connection.
struct RawResponse {
    /// Everything the server wrote.
    var text: String
    /// Whether the server closed the connection (within the wait).
    var closed: Bool

    /// The status code of the first response, 0 if none.
    var status: Int { Self.status(of: text) }

    /// The status codes of every response head, in order (`100` then `200`, say).
    var statuses: [Int] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap { Int($0.prefix(3)) }
    }

    /// The JSON body after the last head, or `.null`.
    var body: JSONValue {
        guard let range = text.range(of: "\r\n\r\n", options: .backwards) else { return .null }
        return (try? JSONDecoder().decode(JSONValue.self, from: Data(text[range.upperBound...].utf8))) ?? .null
    }

    /// The value of the header `name` in the last head, or nil.
    func header(_ name: String) -> String? {
        let heads = text.components(separatedBy: "\r\n\r\n").dropLast()
        for line in (heads.last ?? "").components(separatedBy: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() { return parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    private static func status(of text: String) -> Int {
        guard text.hasPrefix("HTTP/1.1 ") else { return 0 }
        return Int(text.dropFirst(9).prefix(3)) ?? 0
    }
}

/// `connect(2)` of the socket `fd` to 127.0.0.1:`port`: its result (0, or -1 with `errno` set; `EINPROGRESS` for a
/// non-blocking socket whose handshake is under way).
func connectLoopback(_ fd: Int32, port: Int) -> Int32 {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}

/// A TCP connection to the server under test, sending and reading only when told.
final class RawConnection: @unchecked Sendable {
    // @unchecked: one test uses a connection, one call at a time.
    private let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestAppError(message: "socket failed") }
        guard connectLoopback(fd, port: port) == 0 else {
            close(fd)
            throw TestAppError(message: "connect failed")
        }
    }

    deinit {
        close(fd)
    }

    /// Sends all of `bytes`; false once the server has gone (no SIGPIPE).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Sends `text`'s UTF-8; false once the server has gone.
    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Whether the server wrote something (or closed) within `milliseconds`.
    func hasInput(within milliseconds: Int32) async -> Bool {
        await onOwnThread { self.waitForInput(within: milliseconds) }
    }

    private func waitForInput(within milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, milliseconds) > 0
    }

    /// Sends `bytes` one at a time, `interval` apart, until they are all sent or the server answers or closes;
    /// returns how many were sent.
    func trickle(_ bytes: [UInt8], interval: Duration) async -> Int {
        await onOwnThread { self.trickleBlocking(bytes, interval: interval) }
    }

    private func trickleBlocking(_ bytes: [UInt8], interval: Duration) -> Int {
        let milliseconds = Int32(interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
        for (index, byte) in bytes.enumerated() {
            if waitForInput(within: milliseconds) || !send([byte]) { return index }
        }
        return bytes.count
    }

    /// Reads until the server closes or `timeout` passes without it.
    func readResponse(timeout: Duration = .seconds(5)) async -> RawResponse {
        await onOwnThread { self.readResponseBlocking(timeout: timeout) }
    }

    private func readResponseBlocking(timeout: Duration) -> RawResponse {
        let deadline = ContinuousClock.now + timeout
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var closed = false
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            let milliseconds = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000) + 1
            guard waitForInput(within: milliseconds) else { break }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 {
                closed = true
                break
            }
            bytes += buffer[0..<count]
        }
        return RawResponse(text: String(decoding: bytes, as: UTF8.self), closed: closed)
    }

    /// Reads what arrives within `timeout`, without waiting for a close.
    func readAvailable(timeout: Duration) async -> String {
        await onOwnThread { self.readAvailableBlocking(timeout: timeout) }
    }

    private func readAvailableBlocking(timeout: Duration) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        while waitForInput(within: bytes.isEmpty ? milliseconds : 50) {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
