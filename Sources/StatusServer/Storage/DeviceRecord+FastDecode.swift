import StatusCore

extension DeviceRecord {
    /// Reads a stored record without `JSONDecoder`, which costs more than the rest of a departure's reply: every
    /// connect and departure reads one or more records back from its script. The scripts write a record with cjson as
    /// one flat object of string and integer members; that shape, with no escape in any string, is read here with
    /// ``JSONFastScanner``. Anything else (an escape, a fraction, a nested value, a member it reads given twice, a
    /// member missing or of another type) answers nil, and ``decode(_:)`` hands the record to `JSONDecoder`, which
    /// decides; other members are skipped by both.
    static func fastDecode(_ bytes: UnsafeRawBufferPointer) -> DeviceRecord? {
        var scanner = JSONFastScanner(bytes)
        var seen = JSONMemberSet()
        var platform: String?
        var node: String?
        var connection: String?
        var kind: Kind?
        var heartbeat: Int64?
        var connectedAt: Int64?
        var state: DeviceState?
        let read = scanner.members { scanner, key in
            switch key {
            case "p": return seen.first(0) && scanner.required(into: &platform) { $0.plainString() }
            case "n": return seen.first(1) && scanner.required(into: &node) { $0.plainString() }
            case "c": return seen.first(2) && scanner.required(into: &connection) { $0.plainString() }
            case "k": return seen.first(3) && scanner.required(into: &kind) { $0.plainString().flatMap(Kind.init(rawValue:)) }
            case "hb": return seen.first(4) && scanner.required(into: &heartbeat) { $0.integer() }
            case "ct": return seen.first(5) && scanner.required(into: &connectedAt) { $0.integer() }
            case "s": return seen.first(6) && scanner.required(into: &state) { $0.plainString().flatMap(DeviceState.init(rawValue:)) }
            default: return scanner.peek(UInt8(ascii: "\"")) ? scanner.plainString() != nil : scanner.integer() != nil
            }
        }
        guard read, scanner.atEnd(), let platform, let node, let connection, let kind else { return nil }
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
