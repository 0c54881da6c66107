/// Whether a comma-separated header (`Connection: keep-alive, Upgrade`, `Upgrade: websocket`) lists a token, compared
/// ASCII case-insensitively after trimming spaces and tabs (RFC 9110 §5.6.1, §5.6.3).
///
/// Works on the UTF-8 bytes: Foundation's `trimmingCharacters(in:)` bridged each token through `NSString`, on every
/// device connect.
enum HeaderTokens {
    static func contains(_ values: [String], token: String) -> Bool {
        let wanted = Array(token.utf8).map(lowercased)
        return values.contains { value in
            value.utf8.split(separator: UInt8(ascii: ",")).contains { element in
                equals(trimmed(element), wanted)
            }
        }
    }

    private static func trimmed(_ bytes: Substring.UTF8View.SubSequence) -> Substring.UTF8View.SubSequence {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return bytes[bytes.endIndex...]
        }
        return bytes[first...last]
    }

    private static func equals(_ bytes: Substring.UTF8View.SubSequence, _ wanted: [UInt8]) -> Bool {
        bytes.count == wanted.count && zip(bytes, wanted).allSatisfy { lowercased($0) == $1 }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}
