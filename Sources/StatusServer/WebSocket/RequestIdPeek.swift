import StatusCore

/// The `id` of a request frame that cannot be decoded as a whole (malformed further on, nested too deeply), so that
/// its error reply still carries the `id` the client will match it by (SPEC §7 replies).
///
/// One forward pass over the top-level object, no recursion and no allocation but the result: it walks the members
/// in order, skipping nested values by counting brackets outside strings, and stops at the first member named `id`
/// whose value is a string without escapes or an integer. Anything it cannot follow ends the search (nil).
enum RequestIdPeek {
    static func id(in bytes: some Collection<UInt8>) -> JSONValue? {
        var index = bytes.startIndex
        func skipSpace() {
            while index != bytes.endIndex, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index = bytes.index(after: index) }
        }
        /// Reads a string starting at its opening quote; nil when it is cut short. `raw` is false when it has escapes.
        func string() -> (value: [UInt8], raw: Bool)? {
            guard index != bytes.endIndex, bytes[index] == UInt8(ascii: "\"") else { return nil }
            index = bytes.index(after: index)
            var value: [UInt8] = []
            var raw = true
            while index != bytes.endIndex {
                let byte = bytes[index]
                index = bytes.index(after: index)
                if byte == UInt8(ascii: "\"") { return (value, raw) }
                if byte == UInt8(ascii: "\\") {
                    raw = false
                    guard index != bytes.endIndex else { return nil }
                    index = bytes.index(after: index)
                    continue
                }
                value.append(byte)
            }
            return nil
        }
        /// Skips one value of any kind; false when it cannot.
        func skipValue() -> Bool {
            var depth = 0
            while index != bytes.endIndex {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    guard string() != nil else { return false }
                    if depth == 0 { return true }
                    continue
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    depth += 1
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    if depth == 0 { return true }
                    depth -= 1
                    if depth == 0 {
                        index = bytes.index(after: index)
                        return true
                    }
                case UInt8(ascii: ","):
                    if depth == 0 { return true }
                default:
                    break
                }
                index = bytes.index(after: index)
            }
            return depth == 0
        }
        skipSpace()
        guard index != bytes.endIndex, bytes[index] == UInt8(ascii: "{") else { return nil }
        index = bytes.index(after: index)
        while true {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard index != bytes.endIndex, bytes[index] == UInt8(ascii: ":") else { return nil }
            index = bytes.index(after: index)
            skipSpace()
            if key.raw, key.value == Array("id".utf8) {
                if let value = string() {
                    guard value.raw, let text = String(validating: value.value, as: UTF8.self) else { return nil }
                    return .string(text)
                }
                var digits: [UInt8] = []
                while index != bytes.endIndex, bytes[index] == UInt8(ascii: "-") || (bytes[index] >= 0x30 && bytes[index] <= 0x39) {
                    digits.append(bytes[index])
                    index = bytes.index(after: index)
                }
                return Int64(String(decoding: digits, as: UTF8.self)).map { JSONValue.int($0) }
            }
            guard skipValue() else { return nil }
            skipSpace()
            guard index != bytes.endIndex, bytes[index] == UInt8(ascii: ",") else { return nil }
            index = bytes.index(after: index)
        }
    }
}
