import Foundation

/// A session's connection id: a random (version 4) UUID, which is also the session's resume token (SPEC §7), so it
/// must not be guessable.
///
/// Drawn from the system's generator (`getrandom`), not `UUID()`: Foundation's opens, reads and closes `/dev/urandom`
/// for every UUID, three system calls on every connect.
enum ConnectionId {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        return make(high: generator.next(), low: generator.next())
    }

    /// The UUID of these 128 random bits, with the version (4) and variant (RFC 9562) bits set.
    static func make(high: UInt64, low: UInt64) -> String {
        let high = (high & ~0xF000) | 0x4000
        let low = (low & ~(0xC000 << 48)) | (0x8000 << 48)
        let bytes = (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) } + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
        let uuid = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            )
        )
        return uuid.uuidString
    }
}
