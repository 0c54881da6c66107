/// A frame received by a device, as far as the loader cares. statusd writes compact JSON with sorted keys, so the
/// fields are found by scanning the UTF-8 bytes (much cheaper than decoding tens of thousands of events per second).
enum DeviceFrame: Equatable {
    /// `{"event":"welcome",...}`: the connection is established.
    case welcome
    /// `{"event":"onUserStatusChanged",...}` about user `user` (the index in `u<index>`) at `version`; `change` is the
    /// loader's change (`customStatus` = `"<seq>:<send time ms>"`) when the status carries one.
    case statusChanged(user: Int, version: Int64, change: Change?)
    /// A reply `{"id":...,"ok":...}`.
    case reply(ok: Bool)
    /// `{"event":"kicked",...}`.
    case kicked
    /// Anything else.
    case other

    /// The loader's change carried in a custom status.
    struct Change: Equatable {
        var sequence: Int
        var sentMs: Int64
    }

    /// Classifies a text frame.
    static func parse(_ text: String) -> DeviceFrame {
        var copy = text
        return copy.withUTF8 { parse(bytes: $0) }
    }

    static func parse(bytes: UnsafeBufferPointer<UInt8>) -> DeviceFrame {
        if let start = find(Self.eventKey, in: bytes, from: 0) {
            if hasPrefix(Self.statusChangedValue, in: bytes, at: start) { return parseStatus(bytes) }
            if hasPrefix(Self.welcomeValue, in: bytes, at: start) { return .welcome }
            if hasPrefix(Self.kickedValue, in: bytes, at: start) { return .kicked }
            return .other
        }
        if let start = find(Self.okKey, in: bytes, from: 0) {
            return .reply(ok: hasPrefix(Array("true".utf8), in: bytes, at: start))
        }
        return .other
    }

    private static func parseStatus(_ bytes: UnsafeBufferPointer<UInt8>) -> DeviceFrame {
        guard let userStart = find(Self.userIdKey, in: bytes, from: 0) else { return .other }
        var index = userStart
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") && !isDigit(bytes[index]) { index += 1 }
        guard let (user, _) = integer(in: bytes, at: index), let versionStart = find(Self.versionKey, in: bytes, from: 0),
            let (version, _) = integer(in: bytes, at: versionStart)
        else { return .other }
        var change: Change?
        if let statusStart = find(Self.customStatusKey, in: bytes, from: 0), let (sequence, next) = integer(in: bytes, at: statusStart),
            next < bytes.count, bytes[next] == UInt8(ascii: ":"), let (sentMs, _) = integer(in: bytes, at: next + 1)
        {
            change = Change(sequence: Int(sequence), sentMs: sentMs)
        }
        return .statusChanged(user: Int(user), version: version, change: change)
    }

    private static let eventKey = Array(#""event":""#.utf8)
    private static let okKey = Array(#""ok":"#.utf8)
    private static let userIdKey = Array(#""userId":""#.utf8)
    private static let versionKey = Array(#""version":"#.utf8)
    private static let customStatusKey = Array(#""customStatus":""#.utf8)
    private static let statusChangedValue = Array(#"onUserStatusChanged""#.utf8)
    private static let welcomeValue = Array(#"welcome""#.utf8)
    private static let kickedValue = Array(#"kicked""#.utf8)

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// The decimal integer starting at `start` and the index after it.
    private static func integer(in bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> (Int64, Int)? {
        var index = start
        var value: Int64 = 0
        while index < bytes.count, isDigit(bytes[index]), index - start < 18 {
            value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        return index == start ? nil : (value, index)
    }

    private static func hasPrefix(_ prefix: [UInt8], in bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> Bool {
        guard start + prefix.count <= bytes.count else { return false }
        for offset in 0..<prefix.count where bytes[start + offset] != prefix[offset] { return false }
        return true
    }

    /// The index just after the first occurrence of `needle` at or after `from`.
    private static func find(_ needle: [UInt8], in bytes: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        guard let first = needle.first, bytes.count >= needle.count else { return nil }
        var index = from
        let last = bytes.count - needle.count
        while index <= last {
            if bytes[index] == first, hasPrefix(needle, in: bytes, at: index) { return index + needle.count }
            index += 1
        }
        return nil
    }
}
