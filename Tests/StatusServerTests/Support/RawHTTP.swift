import Foundation
import StatusCore

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 request over a plain TCP socket, read until the server closes: for refused WebSocket upgrades, which
/// answer and close the connection.
enum RawHTTP {
    static func get(port: Int, path: String, headers: [String: String], method: String = "GET") throws -> (status: Int, body: JSONValue) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestAppError(message: "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { throw TestAppError(message: "connect failed") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        let bytes = Array(request.utf8)
        guard send(fd, bytes, bytes.count, 0) == bytes.count else { throw TestAppError(message: "send failed") }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            response += buffer[0..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        let statusLine = text.split(separator: "\r\n", maxSplits: 1).first ?? ""
        let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") ?? 0
        let body = text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        let json = (try? JSONDecoder().decode(JSONValue.self, from: Data(body.utf8))) ?? .null
        return (status, json)
    }
}
