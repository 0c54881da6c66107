/// A forward-only cursor over the UTF-8 bytes of one JSON text, enough to pick a few fields out of a frame without
/// decoding it: values the caller does not ask for are skipped by matching brackets and quotes. Separators are read
/// leniently; malformed input ends the scan (every reader returns nil or false) instead of trapping.
struct JSONByteScanner {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    private static let quote = UInt8(ascii: "\"")
    private static let backslash = UInt8(ascii: "\\")
    private static let comma = UInt8(ascii: ",")
    private static let colon = UInt8(ascii: ":")

    private mutating func skipSpaces() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    /// Whether the next value is a string (and not `null`).
    var peekIsString: Bool {
        var probe = self
        probe.skipSpaces()
        return probe.index < bytes.count && bytes[probe.index] == Self.quote
    }

    /// Consumes `{`; false when the next value is not an object.
    mutating func enterObject() -> Bool { enter(UInt8(ascii: "{")) }

    /// Consumes `[`; false when the next value is not an array.
    mutating func enterArray() -> Bool { enter(UInt8(ascii: "[")) }

    private mutating func enter(_ opening: UInt8) -> Bool {
        skipSpaces()
        guard index < bytes.count, bytes[index] == opening else { return false }
        index += 1
        return true
    }

    /// The next key of the object being read (its bytes, without quotes), positioned at its value; nil after `}`.
    mutating func nextKey() -> Range<Int>? {
        skipSpaces()
        if index < bytes.count, bytes[index] == Self.comma {
            index += 1
            skipSpaces()
        }
        guard index < bytes.count, bytes[index] == Self.quote, let key = readString() else {
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1 } else { index = bytes.count }
            return nil
        }
        skipSpaces()
        guard index < bytes.count, bytes[index] == Self.colon else {
            index = bytes.count
            return nil
        }
        index += 1
        return key
    }

    /// Moves to the next element of the array being read; false after `]`.
    mutating func nextElement() -> Bool {
        skipSpaces()
        if index < bytes.count, bytes[index] == Self.comma {
            index += 1
            skipSpaces()
        }
        guard index < bytes.count else { return false }
        if bytes[index] == UInt8(ascii: "]") {
            index += 1
            return false
        }
        return true
    }

    /// The contents of the string value at the position (escapes left as they are); nil when it is not a string.
    mutating func readString() -> Range<Int>? {
        skipSpaces()
        guard index < bytes.count, bytes[index] == Self.quote else { return nil }
        let start = index + 1
        var cursor = start
        while cursor < bytes.count {
            let byte = bytes[cursor]
            if byte == Self.quote {
                index = cursor + 1
                return start..<cursor
            }
            cursor += byte == Self.backslash ? 2 : 1
        }
        index = bytes.count
        return nil
    }

    /// A non-negative decimal integer value (at most 18 digits).
    mutating func readInteger() -> Int64? {
        skipSpaces()
        guard let (value, end) = integer(at: index, limit: bytes.count) else { return nil }
        index = end
        return value
    }

    /// A `true` or `false` value.
    mutating func readBool() -> Bool? {
        skipSpaces()
        guard index < bytes.count else { return nil }
        let isTrue = bytes[index] == UInt8(ascii: "t")
        guard skipValue() else { return nil }
        return isTrue
    }

    /// Skips the value at the position, whatever it is.
    mutating func skipValue() -> Bool {
        skipSpaces()
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case Self.quote:
            return readString() != nil
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == Self.quote {
                    guard readString() != nil else { return false }
                    continue
                }
                if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                    depth += 1
                } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                    depth -= 1
                    if depth == 0 {
                        index += 1
                        return true
                    }
                }
                index += 1
            }
            return false
        default:
            // Number or literal: up to the next separator.
            while index < bytes.count {
                switch bytes[index] {
                case Self.comma, UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09: return true
                default: index += 1
                }
            }
            return true
        }
    }

    /// Whether the bytes of `range` are exactly `literal`.
    func equals(_ range: Range<Int>, _ literal: StaticString) -> Bool {
        guard range.count == literal.utf8CodeUnitCount else { return false }
        let pointer = literal.utf8Start
        for offset in 0..<range.count where bytes[range.lowerBound + offset] != pointer[offset] { return false }
        return true
    }

    /// The index of a loader user id `u<index>`, or -1.
    func userIndex(_ range: Range<Int>) -> Int {
        guard range.count >= 2, bytes[range.lowerBound] == UInt8(ascii: "u"),
            let (value, end) = integer(at: range.lowerBound + 1, limit: range.upperBound), end == range.upperBound
        else { return -1 }
        return Int(value)
    }

    /// The loader's change in a custom status `"<sequence>:<send time, monotonic µs>"`, or nil.
    func change(_ range: Range<Int>) -> DeviceFrame.Change? {
        guard let (sequence, colon) = integer(at: range.lowerBound, limit: range.upperBound), colon < range.upperBound,
            bytes[colon] == Self.colon, let (sent, end) = integer(at: colon + 1, limit: range.upperBound), end == range.upperBound
        else { return nil }
        return DeviceFrame.Change(sequence: Int(sequence), sentMicros: UInt64(sent))
    }

    /// The decimal integer starting at `start` (before `limit`) and the index after it.
    private func integer(at start: Int, limit: Int) -> (Int64, Int)? {
        var cursor = start
        var value: Int64 = 0
        while cursor < limit, cursor - start < 18 {
            let digit = bytes[cursor] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            value = value * 10 + Int64(digit)
            cursor += 1
        }
        return cursor == start ? nil : (value, cursor)
    }
}
