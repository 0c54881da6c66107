/// Request bodies of the hot HTTP routes read without Foundation's decoder when they have their plain shape.
///
/// `JSONDecoder` was 12 % of a 500-user status query and 5 % of a `PUT .../status`. A type conforming here reads the
/// common shape of its body (`{"userIds":["a","b"]}`, `{"customStatus":"busy"}`) with ``JSONFastScanner``, and
/// answers nil for anything else: escapes, other members, other whitespace than JSON's, numbers where strings go,
/// invalid UTF-8. It runs once ``StrictJSON`` accepted the body; when it declines, ``RequestBody`` decodes the body with
/// `JSONDecoder`, so a body means the same either way (`JSONFastPathTests` checks this over generated bodies).
protocol JSONFastPath {
    /// The value of a body of the plain shape, or nil.
    static func fastDecode(_ bytes: UnsafeRawBufferPointer) -> Self?
}

/// A strict reader of the few JSON forms the fast paths accept. Any other byte makes the reader fail (nil), never
/// guess.
struct JSONFastScanner {
    private let bytes: UnsafeRawBufferPointer
    private var index = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Skips JSON whitespace (RFC 8259 §2).
    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Consumes `byte` after optional whitespace.
    mutating func expect(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// Whether `byte` comes next (after optional whitespace), without consuming it.
    mutating func peek(_ byte: UInt8) -> Bool {
        skipWhitespace()
        return index < bytes.count && bytes[index] == byte
    }

    /// Consumes `null` after optional whitespace.
    mutating func null() -> Bool {
        skipWhitespace()
        guard index + 4 <= bytes.count, bytes[index] == UInt8(ascii: "n"), bytes[index + 1] == UInt8(ascii: "u"),
            bytes[index + 2] == UInt8(ascii: "l"), bytes[index + 3] == UInt8(ascii: "l")
        else { return false }
        index += 4
        return true
    }

    /// A string without escapes or control characters, in valid UTF-8; nil for anything else.
    ///
    /// Identifiers, platforms and the like are ASCII: such a string is made directly, since ASCII is valid UTF-8.
    /// `String(validating:as:)`, generic and not specialized here, looked its metadata up on every call, and only
    /// strings with other bytes go through it.
    mutating func plainString() -> String? {
        guard expect(UInt8(ascii: "\"")) else { return nil }
        let start = index
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let content = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return ascii ? String(decoding: content, as: UTF8.self) : String(validating: content, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        return nil
    }

    /// An integer as JSON writes it (`-?(0|[1-9][0-9]*)`, no fraction, no exponent) that fits in 64 bits; nil for
    /// anything else.
    mutating func integer() -> Int64? {
        skipWhitespace()
        var position = index
        let negative = position < bytes.count && bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        let first = position
        var magnitude: UInt64 = 0
        while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
            let (times, overflowTimes) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(UInt64(bytes[position] - UInt8(ascii: "0")))
            guard !overflowTimes, !overflowSum else { return nil }
            magnitude = sum
            position += 1
        }
        let digits = position - first
        guard digits > 0, digits == 1 || bytes[first] != UInt8(ascii: "0") else { return nil }
        if position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
            default: break
            }
        }
        let value: Int64
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            value = magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude)
        } else {
            guard magnitude <= UInt64(Int64.max) else { return nil }
            value = Int64(magnitude)
        }
        index = position
        return value
    }

    /// `true` or `false`; nil for anything else.
    mutating func bool() -> Bool? {
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    /// Consumes `text` after optional whitespace.
    private mutating func literal(_ text: StaticString) -> Bool {
        skipWhitespace()
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return false }
        index += count
        return true
    }

    /// Whether only whitespace is left.
    mutating func atEnd() -> Bool {
        skipWhitespace()
        return index == bytes.count
    }
}

extension UserIdList: JSONFastPath {
    /// `{"userIds":[<plain strings>]}`.
    static func fastDecode(_ bytes: UnsafeRawBufferPointer) -> UserIdList? {
        var scanner = JSONFastScanner(bytes)
        guard scanner.expect(UInt8(ascii: "{")), scanner.plainString() == "userIds", scanner.expect(UInt8(ascii: ":")),
            scanner.expect(UInt8(ascii: "["))
        else { return nil }
        var userIds: [String] = []
        if !scanner.expect(UInt8(ascii: "]")) {
            repeat {
                guard let userId = scanner.plainString() else { return nil }
                userIds.append(userId)
            } while scanner.expect(UInt8(ascii: ","))
            guard scanner.expect(UInt8(ascii: "]")) else { return nil }
        }
        guard scanner.expect(UInt8(ascii: "}")), scanner.atEnd() else { return nil }
        return UserIdList(userIds: userIds)
    }
}

extension StatusRoutes.SetStatus: JSONFastPath {
    /// `{}` (keeps the custom status), `{"customStatus":null}` or `{"customStatus":<plain string>}`.
    static func fastDecode(_ bytes: UnsafeRawBufferPointer) -> StatusRoutes.SetStatus? {
        var scanner = JSONFastScanner(bytes)
        guard scanner.expect(UInt8(ascii: "{")) else { return nil }
        var value = StatusRoutes.SetStatus(customStatus: .keep)
        if !scanner.peek(UInt8(ascii: "}")) {
            guard scanner.plainString() == "customStatus", scanner.expect(UInt8(ascii: ":")) else { return nil }
            if scanner.null() {
                value.customStatus = .set(nil)
            } else {
                guard let text = scanner.plainString() else { return nil }
                value.customStatus = .set(text)
            }
        }
        guard scanner.expect(UInt8(ascii: "}")), scanner.atEnd() else { return nil }
        return value
    }
}
