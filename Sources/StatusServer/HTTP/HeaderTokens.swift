import NIOHTTP1

/// Whether a comma-separated header (`Connection: keep-alive, Upgrade`, `Upgrade: websocket`) lists a token, compared
/// ASCII case-insensitively after trimming spaces and tabs (RFC 9110 §5.6.1, §5.6.3).
///
/// Works on the UTF-8 bytes in place, with no copy: Foundation's `trimmingCharacters(in:)` bridged each token through
/// `NSString`, and splitting a value or asking `HTTPHeaders` for a name's values built arrays, on every device connect.
enum HeaderTokens {
    static func contains(_ values: [String], token: String) -> Bool {
        values.contains { lists($0, token: token) }
    }

    /// Whether any of `headers`' fields named `name` (ASCII case-insensitively) lists `token`.
    static func contains(_ headers: HTTPHeaders, name: String, token: String) -> Bool {
        headers.contains { field in equalIgnoringCase(field.name, name) && lists(field.value, token: token) }
    }

    /// Whether `a` and `b` are the same ASCII case-insensitively, as header names compare (RFC 9110 §5.1).
    static func equalIgnoringCase(_ a: String, _ b: String) -> Bool {
        sameIgnoringCase(a.utf8, b.utf8)
    }

    /// Whether one comma-separated element of `value`, trimmed, is `token`.
    private static func lists(_ value: String, token: String) -> Bool {
        let bytes = value.utf8
        var start = bytes.startIndex
        while true {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.endIndex
            if sameIgnoringCase(trimmed(bytes[start..<end]), token.utf8) { return true }
            guard end != bytes.endIndex else { return false }
            start = bytes.index(after: end)
        }
    }

    private static func trimmed(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return bytes[bytes.endIndex...]
        }
        return bytes[first...last]
    }

    /// The one comparison of names and tokens: the same bytes, ASCII letters of either case alike.
    private static func sameIgnoringCase(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { lowercased($0) == lowercased($1) }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}
