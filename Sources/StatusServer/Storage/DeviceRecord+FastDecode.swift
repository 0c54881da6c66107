import StatusCore

extension DeviceRecord {
    /// Reads a stored record without `JSONDecoder`, which costs more than the rest of a departure's reply: every
    /// connect and departure reads one or more records back from its script. The scripts write a record with cjson as
    /// one flat object of string and integer members; that shape, with no escape in any string, is read here. Anything
    /// else (an escape, a fraction, a nested value, a member missing or of another type) answers nil, and
    /// ``decode(_:)`` hands the record to `JSONDecoder`, which decides; unknown members are skipped by both.
    static func fastDecode(_ bytes: UnsafeRawBufferPointer) -> DeviceRecord? {
        var reader = FlatObjectReader(bytes: bytes)
        var platform: String?
        var node: String?
        var connection: String?
        var kind: Kind?
        var heartbeat: Int64?
        var connectedAt: Int64?
        var state: DeviceState?
        guard reader.begin() else { return nil }
        while let member = reader.nextMember() {
            switch (member.name, member.value) {
            case ("p", .string(let value)): platform = value
            case ("n", .string(let value)): node = value
            case ("c", .string(let value)): connection = value
            case ("k", .string(let value)):
                guard let value = Kind(rawValue: value) else { return nil }
                kind = value
            case ("hb", .integer(let value)): heartbeat = value
            case ("ct", .integer(let value)): connectedAt = value
            case ("s", .string(let value)):
                guard let value = DeviceState(rawValue: value) else { return nil }
                state = value
            case ("p", _), ("n", _), ("c", _), ("k", _), ("hb", _), ("ct", _), ("s", _): return nil
            default: continue
            }
        }
        guard reader.finished, let platform, let node, let connection, let kind else { return nil }
        return DeviceRecord(
            platform: platform,
            node: node,
            connection: connection,
            kind: kind,
            heartbeat: heartbeat,
            connectedAt: connectedAt,
            state: state
        )
    }
}

/// Reads a flat JSON object of string and integer members, front to back, giving up (``finished`` false) on anything
/// else.
private struct FlatObjectReader {
    enum Value {
        case string(String)
        case integer(Int64)
    }

    let bytes: UnsafeRawBufferPointer
    private var index = 0
    /// Whether the closing brace was read, and nothing but white space follows it.
    private(set) var finished = false
    private var failed = false

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    mutating func begin() -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return false }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { finish() }
        return true
    }

    /// The next member, or nil at the end of the object or on anything this reader does not take.
    mutating func nextMember() -> (name: String, value: Value)? {
        guard !finished, !failed else { return nil }
        guard let name = string() else { return fail() }
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return fail() }
        index += 1
        skipWhitespace()
        guard index < bytes.count else { return fail() }
        let value: Value
        if bytes[index] == UInt8(ascii: "\"") {
            guard let text = string() else { return fail() }
            value = .string(text)
        } else {
            guard let number = integer() else { return fail() }
            value = .integer(number)
        }
        skipWhitespace()
        guard index < bytes.count else { return fail() }
        switch bytes[index] {
        case UInt8(ascii: ","):
            index += 1
            skipWhitespace()
        case UInt8(ascii: "}"):
            finish()
        default:
            return fail()
        }
        return (name, value)
    }

    private mutating func finish() {
        index += 1
        skipWhitespace()
        finished = index == bytes.count
        failed = !finished
    }

    private mutating func fail() -> (name: String, value: Value)? {
        failed = true
        finished = false
        return nil
    }

    private mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
            index += 1
        }
    }

    /// A string without escapes or control characters, the opening quote at `index`.
    private mutating func string() -> String? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        let start = index + 1
        var end = start
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
            end += 1
        }
        guard end < bytes.count else { return nil }
        index = end + 1
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    /// An integer of at most 18 digits (no fraction, no exponent), its first character at `index`.
    private mutating func integer() -> Int64? {
        var position = index
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        var value: Int64 = 0
        var digits = 0
        while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
            value = value * 10 + Int64(bytes[position] - UInt8(ascii: "0"))
            digits += 1
            position += 1
            guard digits <= 18 else { return nil }
        }
        guard digits > 0 else { return nil }
        if position < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[position]) { return nil }
        index = position
        return negative ? -value : value
    }
}
