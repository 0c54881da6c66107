import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A webhook receiver that never answers, on a real socket of 127.0.0.1: `.hanging` listens and never accepts (the
/// kernel completes each connection into the backlog, the request is sent, and nothing ever comes back), `.refusing`
/// holds a bound port without listening (every connection is refused at once).
final class DeadReceiver: Sendable {
    enum Kind: Sendable {
        case hanging
        case refusing
    }

    let port: Int
    private let descriptor: Int32

    init(_ kind: Kind) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestAppError(message: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, kind == .refusing || listen(fd, 4096) == 0 else {
            close(fd)
            throw TestAppError(message: "bind/listen failed")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// The webhook URL that reaches this receiver.
    var url: String { "http://127.0.0.1:\(port)/hook" }

    deinit {
        close(descriptor)
    }
}
