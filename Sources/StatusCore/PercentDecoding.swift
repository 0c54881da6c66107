/// Percent-decoding of the ids in a request path (SPEC §7 "Request hygiene": decoded once, then validated).
public enum PercentDecoding {
    /// `value` with every `%XX` replaced by its byte, or nil when an escape is malformed (`%`, `%4`, `%zz`) or the
    /// decoded bytes are not UTF-8. Decodes once: `%2541` is `%41`, not `A`. A `+` stays a `+` (that rule belongs to
    /// query strings, not paths).
    public static func decode(_ value: String) -> String? {
        let utf8 = value.utf8
        guard utf8.contains(UInt8(ascii: "%")) else { return value }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            utf8.formIndex(after: &index)
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard index != utf8.endIndex, let high = hexValue(utf8[index]) else { return nil }
            utf8.formIndex(after: &index)
            guard index != utf8.endIndex, let low = hexValue(utf8[index]) else { return nil }
            utf8.formIndex(after: &index)
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Identifiers {
    /// The appId of a path segment: percent-decoded once, then validated; a malformed escape is `INVALID_USER_ID`.
    public static func appId(pathSegment: String) throws(StatusError) -> String {
        try appId(decoded(pathSegment, "appId"))
    }

    /// The userId of a path segment: percent-decoded once (`a%40b` is `a@b`), then validated.
    public static func userId(pathSegment: String) throws(StatusError) -> String {
        try userId(decoded(pathSegment, "userId"))
    }

    /// The deviceId of a path segment: percent-decoded once, then validated.
    public static func deviceId(pathSegment: String) throws(StatusError) -> String {
        try deviceId(decoded(pathSegment, "deviceId"))
    }

    private static func decoded(_ segment: String, _ name: String) throws(StatusError) -> String {
        guard let value = PercentDecoding.decode(segment) else {
            throw StatusError(.invalidUserId, "invalid percent-escape in the \(name) of the path")
        }
        return value
    }
}
