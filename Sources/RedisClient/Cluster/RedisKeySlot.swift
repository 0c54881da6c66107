/// Redis Cluster's key → hash slot function: CRC16 (XMODEM) of the key, or of its hash tag, modulo 16384.
///
/// A key's hash tag is what lies between its first `{` and the next `}`, when that is not empty: every key of one
/// statusd user carries the tag `{appId:userId}`, so they share a slot and one script may touch them all.
public enum RedisKeySlot {
    /// The number of hash slots of a Redis Cluster.
    public static let count = 16_384

    /// The hash slot of `key`.
    public static func of(_ key: String) -> Int {
        var key = key
        return key.withUTF8 { of(bytes: $0) }
    }

    /// The hash slot of a key given as bytes.
    public static func of(bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var hashed = bytes[...]
        if let open = bytes.firstIndex(of: UInt8(ascii: "{")),
            let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")),
            close > open + 1
        {
            hashed = bytes[(open + 1)..<close]
        }
        var crc: UInt16 = 0
        for byte in hashed {
            crc = (crc << 8) ^ crcTable[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return Int(crc) & (count - 1)
    }

    /// A short hash tag for every slot: `"{" + tag(forSlot: s) + "}"` in a name puts that name in slot `s`. Lets a
    /// script on one slot publish to a channel of that slot (Redis refuses a script touching another slot).
    public static func tag(forSlot slot: Int) -> String {
        slotTags[slot]
    }

    /// The first base-36 string found for each slot, counting up from "0" (about 170,000 candidates to cover all).
    private static let slotTags: [String] = {
        var tags = [String?](repeating: nil, count: count)
        var missing = count
        var candidate = 0
        while missing > 0 {
            let tag = String(candidate, radix: 36)
            let slot = of(tag)
            if tags[slot] == nil {
                tags[slot] = tag
                missing -= 1
            }
            candidate += 1
        }
        return tags.map { $0! }
    }()

    private static let crcTable: [UInt16] = (0..<256).map { index in
        var crc = UInt16(index) << 8
        for _ in 0..<8 {
            crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
        }
        return crc
    }
}
