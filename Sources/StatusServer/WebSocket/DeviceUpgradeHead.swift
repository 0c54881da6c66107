import NIOCore
import NIOHTTP1

/// The request head of a device's WebSocket upgrade (`GET /v1/connect`, RFC 6455 §4.1), read from the connection's
/// first bytes without NIO's HTTP codec (``DeviceUpgradeSniffer``). Pure.
///
/// It takes only what is plainly a well-formed upgrade of the device path: `GET` of `/v1/connect` over HTTP/1.1, header
/// lines of a token name and printable ASCII values, no body (`Content-Length` or `Transfer-Encoding`), no line folded
/// onto the next, within NIO's own limits of size and count, passing ``MalformedRequestHandler/problem(with:)`` and
/// ``DeviceUpgrader/problem(with:)``. Anything else, well-formed or not, is `.elsewhere`: the connection goes to NIO's
/// HTTP codec as every other request does, which answers it as before (400 for a malformed request, the SPEC error of a
/// refused upgrade). So this parser never has to answer a request it reads wrong: at worst it hands it over.
enum DeviceUpgradeHead {
    enum Parse: Equatable {
        /// Not enough bytes yet to tell.
        case needMore
        /// Not a device upgrade this parser takes: NIO's HTTP codec gets the bytes.
        case elsewhere
        /// A device upgrade, whose head takes the first `length` bytes.
        case upgrade(HTTPRequestHead, length: Int)
    }

    /// The start of every request this parser takes.
    private static let prefix = Array("GET \(DeviceGateway.path)".utf8)
    private static let version = Array(" HTTP/1.1".utf8)

    /// Reads the readable bytes of `buffer`, the connection's first bytes. `maxBytes` and `maxFields`: the head's size
    /// and header count past which NIO's decoder refuses a request (it is handed over, to be refused).
    ///
    /// On the raw bytes, with plain loops: it runs on every device connect, and the generic collection algorithms
    /// (`firstRange(of:)`, `split`) over a `ByteBufferView` cost a tenth of the node's CPU at 2,000 connects a second.
    static func parse(_ buffer: ByteBuffer, maxBytes: Int, maxFields: Int) -> Parse {
        buffer.withUnsafeReadableBytes { parse($0, maxBytes: maxBytes, maxFields: maxFields) }
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer, maxBytes: Int, maxFields: Int) -> Parse {
        let known = min(bytes.count, prefix.count + 1)
        for index in 0..<min(known, prefix.count) where bytes[index] != prefix[index] { return .elsewhere }
        guard known > prefix.count else { return .needMore }
        // `/v1/connect` alone or with a query; `/v1/connectx` is another path.
        let next = bytes[prefix.count]
        guard next == UInt8(ascii: "?") || next == UInt8(ascii: " ") else { return .elsewhere }
        // The head ends at the first empty line: CR LF CR LF.
        var end = 3
        while end < bytes.count, end < maxBytes,
            !(bytes[end] == 10 && bytes[end - 1] == 13 && bytes[end - 2] == 10 && bytes[end - 3] == 13)
        {
            end += 1
        }
        guard end < maxBytes else { return .elsewhere }
        guard end < bytes.count else { return .needMore }
        // Every line ends with CR LF, the last header line's included: a bare LF (a line break NIO's decoder may read
        // otherwise) hands the request over.
        var target: String?
        var headers: [(String, String)] = []
        var start = 0
        while start < end - 1 {
            var lineFeed = start
            while bytes[lineFeed] != 10 { lineFeed += 1 }
            guard lineFeed > start, bytes[lineFeed - 1] == 13 else { return .elsewhere }
            let line = UnsafeRawBufferPointer(rebasing: bytes[start..<(lineFeed - 1)])
            if target == nil {
                guard let requested = Self.target(of: line) else { return .elsewhere }
                target = requested
            } else {
                guard headers.count < maxFields, let field = field(line) else { return .elsewhere }
                headers.append(field)
            }
            start = lineFeed + 1
        }
        guard let target else { return .elsewhere }
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: HTTPHeaders(headers))
        guard !head.headers.contains(name: "content-length"), !head.headers.contains(name: "transfer-encoding"),
            MalformedRequestHandler.problem(with: head) == nil, DeviceUpgrader.problem(with: head) == nil
        else { return .elsewhere }
        return .upgrade(head, length: end + 1)
    }

    /// The target of `GET <target> HTTP/1.1`, printable ASCII without spaces; nil for anything else.
    private static func target(of line: UnsafeRawBufferPointer) -> String? {
        guard line.count > 4 + version.count else { return nil }
        let versionStart = line.count - version.count
        for index in 0..<version.count where line[versionStart + index] != version[index] { return nil }
        let target = UnsafeRawBufferPointer(rebasing: line[4..<versionStart])
        guard target.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        return String(decoding: target, as: UTF8.self)
    }

    /// `name: value`, the value without the spaces around it; nil for a line without a colon, or a value with a byte
    /// outside printable ASCII and tab. The name is checked with the whole head
    /// (``MalformedRequestHandler/problem(with:)``: a token, so neither a space before the colon nor a folded line).
    private static func field(_ line: UnsafeRawBufferPointer) -> (String, String)? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        var first = colon + 1
        var last = line.count
        while first < last, line[first] == 0x20 || line[first] == 0x09 { first += 1 }
        while last > first, line[last - 1] == 0x20 || line[last - 1] == 0x09 { last -= 1 }
        let value = UnsafeRawBufferPointer(rebasing: line[first..<last])
        guard value.allSatisfy({ $0 == 0x09 || (0x20...0x7E).contains($0) }) else { return nil }
        return (
            String(decoding: UnsafeRawBufferPointer(rebasing: line[0..<colon]), as: UTF8.self),
            String(decoding: value, as: UTF8.self)
        )
    }
}
