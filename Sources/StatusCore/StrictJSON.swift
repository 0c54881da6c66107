/// Checks that bytes are one JSON text as RFC 8259 defines it, in UTF-8, before any decoder sees them (SPEC §7:
/// malformed JSON is `INVALID_REQUEST`), and that the top-level object has only the members a body may have.
///
/// Foundation's `JSONDecoder` is lenient (it takes trailing commas, UTF-16 and UTF-32 bodies, lone surrogate escapes),
/// and it never looks at members nobody decodes, so a request could pass with junk inside a field the route ignores.
/// This is one linear pass with no recursion and no allocation (but for reading a number with an exponent, or of
/// hundreds of digits, to check that a `Double` can hold it): the open arrays and objects are bits of one word
/// (hence at most 64 levels), and it stops at the first byte that breaks the grammar or the first level past the
/// depth limit, so a 1 MiB body of `[` costs 33 bytes of work, and a small body a few nanoseconds per byte.
public enum StrictJSON {
    /// The deepest nesting any JSON body of the API may have (SPEC §1's deepest rule, profile `metadata` ≤ 16 levels,
    /// sits one level inside the body, so 32 leaves room and refuses nothing legitimate).
    public static let maxBodyDepth = 32

    /// The members a body's top-level object may have: any other, or one given twice, is `INVALID_REQUEST`.
    public struct Members: Sendable {
        /// The names, in the order given.
        public let names: [String]
        /// Their UTF-8, compared with the bytes of a body.
        let spellings: [[UInt8]]

        /// At most 64 names.
        public init(_ names: [String]) {
            precondition(names.count <= 64, "at most 64 members")
            self.names = names
            self.spellings = names.map { Array($0.utf8) }
        }

        /// The index of the member spelled `bytes`, or nil.
        func index(of bytes: UnsafeRawBufferPointer) -> Int? {
            spellings.firstIndex { $0.count == bytes.count && $0.elementsEqual(bytes) }
        }
    }

    /// Throws `INVALID_REQUEST` unless `bytes` are exactly one RFC 8259 JSON text in UTF-8 (no byte order mark),
    /// nested at most `maxDepth` levels, whose top-level members (when it is an object and `members` is given) are
    /// all listed in `members`, each at most once. Names are compared after unescaping (`"\u0061"` is `"a"`).
    public static func validate(
        _ bytes: UnsafeRawBufferPointer,
        maxDepth: Int = maxBodyDepth,
        members: Members? = nil
    ) throws(StatusError) {
        var scanner = Scanner(bytes: bytes, maxDepth: maxDepth, members: members)
        try scanner.run()
    }

    /// Where the scan is in the grammar: what may come next.
    private enum Expect {
        /// Any value (the start, after `:`, after `,` in an array).
        case value
        /// A value or `]` (right after `[`).
        case valueOrEnd
        /// A member name or `}` (right after `{`).
        case nameOrEnd
        /// A member name (after `,` in an object).
        case name
        case colon
        /// `,` or the close of the open container.
        case commaOrEnd
        /// Nothing but whitespace (the top-level value is complete).
        case nothing
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        let maxDepth: Int
        let members: Members?
        var index = 0
        var depth = 0
        /// Bit `n` is set when the container at depth `n + 1` is an object.
        var objects: UInt64 = 0
        /// Bit `n` is set once the top-level member `members.names[n]` was seen.
        var seen: UInt64 = 0

        init(bytes: UnsafeRawBufferPointer, maxDepth: Int, members: Members?) {
            precondition(maxDepth >= 0 && maxDepth <= 64, "the open containers are bits of one word")
            self.bytes = bytes
            self.maxDepth = maxDepth
            self.members = members
        }

        mutating func run() throws(StatusError) {
            var expect = Expect.value
            while true {
                skipWhitespace()
                guard index < bytes.count else { break }
                let byte = bytes[index]
                switch expect {
                case .value, .valueOrEnd:
                    if byte == UInt8(ascii: "]") && expect == .valueOrEnd {
                        index += 1
                        depth -= 1
                        expect = depth == 0 ? .nothing : .commaOrEnd
                        continue
                    }
                    expect = try value(startingWith: byte)
                case .nameOrEnd, .name:
                    if byte == UInt8(ascii: "}") && expect == .nameOrEnd {
                        index += 1
                        depth -= 1
                        expect = depth == 0 ? .nothing : .commaOrEnd
                        continue
                    }
                    guard byte == UInt8(ascii: "\"") else {
                        throw fail(expect == .name && byte == UInt8(ascii: "}") ? "trailing comma" : "expected a member name")
                    }
                    let start = index
                    let escaped = try string()
                    if depth == 1, let members { try check(name: start + 1..<index - 1, escaped: escaped, in: members) }
                    expect = .colon
                case .colon:
                    guard byte == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    index += 1
                    expect = .value
                case .commaOrEnd:
                    let inObject = objects & (1 << UInt64(depth - 1)) != 0
                    if byte == UInt8(ascii: ",") {
                        index += 1
                        expect = inObject ? .name : .value
                    } else if byte == (inObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                        index += 1
                        depth -= 1
                        expect = depth == 0 ? .nothing : .commaOrEnd
                    } else {
                        throw fail(inObject ? "expected ',' or '}'" : "expected ',' or ']'")
                    }
                case .nothing:
                    throw fail("unexpected data after the JSON value")
                }
            }
            guard expect == .nothing else { throw fail("unexpected end of JSON") }
        }

        /// Reads a value starting with `byte`, or opens a container; returns what may follow.
        private mutating func value(startingWith byte: UInt8) throws(StatusError) -> Expect {
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard depth < maxDepth else { throw StatusError(.invalidRequest, "JSON nested deeper than \(maxDepth) levels") }
                let isObject = byte == UInt8(ascii: "{")
                if isObject { objects |= 1 << UInt64(depth) } else { objects &= ~(1 << UInt64(depth)) }
                depth += 1
                index += 1
                return isObject ? .nameOrEnd : .valueOrEnd
            case UInt8(ascii: "\""):
                _ = try string()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try number()
            case UInt8(ascii: "t"):
                try literal("true")
            case UInt8(ascii: "f"):
                try literal("false")
            case UInt8(ascii: "n"):
                try literal("null")
            case UInt8(ascii: "]"):
                throw fail("trailing comma")
            default:
                throw fail("expected a value")
            }
            return depth == 0 ? .nothing : .commaOrEnd
        }

        private mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        private mutating func literal(_ word: StaticString) throws(StatusError) {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw fail("invalid literal") }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw fail("invalid literal") }
            index += count
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` (RFC 8259 §6): no leading zeros, no `+`, no bare `.`.
        /// A number past a `Double`'s range (RFC 8259 §6 lets an implementation set one) is refused as well: beyond the
        /// largest finite value, or a non-zero number so small it would read as zero. `JSONDecoder` refuses both, and
        /// what this check takes, the decoder must read.
        private mutating func number() throws(StatusError) {
            let start = index
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                if index < bytes.count, isDigit(bytes[index]) { throw fail("leading zero in a number") }
            } else {
                skipDigits()
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
                skipDigits()
            }
            if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
                skipDigits()
                try inRange(from: start)
            } else if index - start > 300 {
                // Without an exponent only a number of more than 308 digits leaves the range.
                try inRange(from: start)
            }
        }

        /// Refuses the number from `start` to here when a `Double` cannot hold it (see ``number()``). Only numbers with
        /// an exponent or hundreds of digits are read, so the common body costs nothing more.
        private func inRange(from start: Int) throws(StatusError) {
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let value = Double(text), value.isFinite else { throw fail("number out of range") }
            if value == 0 {
                // Zero only when every digit before the exponent is.
                let mantissa = text.utf8.prefix { $0 | 0x20 != UInt8(ascii: "e") }
                guard mantissa.allSatisfy({ $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }) else {
                    throw fail("number out of range")
                }
            }
        }

        private func isDigit(_ byte: UInt8) -> Bool {
            byte &- UInt8(ascii: "0") < 10
        }

        private mutating func skipDigits() {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }

        /// Reads a string from its opening quote past its closing one: no control characters, only RFC 8259's escapes
        /// (a `\u` surrogate only as a high-low pair), well-formed UTF-8 (no overlong forms, no surrogates, nothing past
        /// U+10FFFF). Returns whether it had escapes.
        private mutating func string() throws(StatusError) -> Bool {
            index += 1
            var escaped = false
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return escaped
                }
                if byte == UInt8(ascii: "\\") {
                    escaped = true
                    try escape()
                } else if byte < 0x20 {
                    throw fail("control character in a string")
                } else if byte < 0x80 {
                    index += 1
                } else {
                    try multiByteScalar()
                }
            }
            throw fail("unterminated string")
        }

        private mutating func escape() throws(StatusError) {
            guard index + 1 < bytes.count else { throw fail("unterminated string") }
            switch bytes[index + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                UInt8(ascii: "r"), UInt8(ascii: "t"):
                index += 2
            case UInt8(ascii: "u"):
                let unit = try hexUnit(at: index + 2)
                index += 6
                if (0xDC00...0xDFFF).contains(unit) { throw fail("lone low surrogate escape") }
                if (0xD800...0xDBFF).contains(unit) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u"),
                        (0xDC00...0xDFFF).contains(try hexUnit(at: index + 2))
                    else { throw fail("lone high surrogate escape") }
                    index += 6
                }
            default:
                throw fail("invalid escape")
            }
        }

        /// The four hex digits at `position` of a `\u` escape.
        private func hexUnit(at position: Int) throws(StatusError) -> UInt16 {
            guard position + 4 <= bytes.count else { throw fail("invalid \\u escape") }
            var unit: UInt16 = 0
            for offset in 0..<4 {
                let byte = bytes[position + offset]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw fail("invalid \\u escape")
                }
                unit = unit << 4 | UInt16(digit)
            }
            return unit
        }

        /// One scalar of two to four bytes (RFC 3629 §4).
        private mutating func multiByteScalar() throws(StatusError) {
            let lead = bytes[index]
            let count: Int
            var second: ClosedRange<UInt8> = 0x80...0xBF
            switch lead {
            case 0xC2...0xDF: count = 2
            case 0xE0:
                count = 3
                second = 0xA0...0xBF
            case 0xED:
                count = 3
                second = 0x80...0x9F
            case 0xE1...0xEF: count = 3
            case 0xF0:
                count = 4
                second = 0x90...0xBF
            case 0xF4:
                count = 4
                second = 0x80...0x8F
            case 0xF1...0xF3: count = 4
            default: throw fail("invalid UTF-8")
            }
            guard index + count <= bytes.count, second.contains(bytes[index + 1]) else { throw fail("invalid UTF-8") }
            for offset in 2..<count where bytes[index + offset] & 0xC0 != 0x80 { throw fail("invalid UTF-8") }
            index += count
        }

        /// Checks one top-level member name (the bytes between its quotes).
        private mutating func check(name range: Range<Int>, escaped: Bool, in members: Members) throws(StatusError) {
            let raw = UnsafeRawBufferPointer(rebasing: bytes[range])
            let position: Int?
            let name: [UInt8]
            if escaped {
                name = Self.unescape(raw)
                position = name.withUnsafeBytes { members.index(of: $0) }
            } else {
                name = []
                position = members.index(of: raw)
            }
            guard let position else {
                let spelled = escaped ? String(decoding: name, as: UTF8.self) : String(decoding: raw, as: UTF8.self)
                throw StatusError(.invalidRequest, "unknown field \"\(spelled.prefix(64))\"")
            }
            let bit: UInt64 = 1 << UInt64(position)
            guard seen & bit == 0 else {
                throw StatusError(.invalidRequest, "field \"\(members.names[position])\" given twice")
            }
            seen |= bit
        }

        /// The UTF-8 of a string's content whose escapes were already checked.
        private static func unescape(_ raw: UnsafeRawBufferPointer) -> [UInt8] {
            var result: [UInt8] = []
            var index = 0
            func unit(at position: Int) -> UInt32 {
                UInt32(raw[position..<position + 4].reduce(0) { $0 << 4 | UInt16(hexDigit($1)) })
            }
            while index < raw.count {
                let byte = raw[index]
                guard byte == UInt8(ascii: "\\") else {
                    result.append(byte)
                    index += 1
                    continue
                }
                let kind = raw[index + 1]
                index += 2
                switch kind {
                case UInt8(ascii: "b"): result.append(0x08)
                case UInt8(ascii: "f"): result.append(0x0C)
                case UInt8(ascii: "n"): result.append(0x0A)
                case UInt8(ascii: "r"): result.append(0x0D)
                case UInt8(ascii: "t"): result.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = unit(at: index)
                    index += 4
                    if (0xD800...0xDBFF).contains(scalar) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (unit(at: index + 2) - 0xDC00)
                        index += 6
                    }
                    result.append(contentsOf: String(Character(Unicode.Scalar(scalar) ?? "?")).utf8)
                default: result.append(kind)
                }
            }
            return result
        }

        private static func hexDigit(_ byte: UInt8) -> UInt8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            default: byte - UInt8(ascii: "A") + 10
            }
        }

        private func fail(_ reason: String) -> StatusError {
            StatusError(.invalidRequest, "malformed JSON at byte \(index): \(reason)")
        }
    }
}
