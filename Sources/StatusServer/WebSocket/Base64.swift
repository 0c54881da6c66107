import NIOCore

/// Standard base64 (RFC 4648 §4) for the WebSocket handshake's two fields, worked on bytes: `Sec-WebSocket-Key` is
/// checked and `Sec-WebSocket-Accept` written on every device connect, where Foundation's `Data` round trips made
/// several allocations each.
enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// The six bits a character of the alphabet stands for; nil for any other byte (`=` included).
    static func value(of byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }

    /// Appends the base64 of `bytes`, padded with `=`.
    static func write(_ bytes: UnsafeRawBufferPointer, into buffer: inout ByteBuffer) {
        let size = (bytes.count + 2) / 3 * 4
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { output in
            var position = 0
            var index = 0
            while index < bytes.count {
                let remaining = bytes.count - index
                let first = UInt32(bytes[index]) << 16
                let second = remaining > 1 ? UInt32(bytes[index + 1]) << 8 : 0
                let third = remaining > 2 ? UInt32(bytes[index + 2]) : 0
                let group = first | second | third
                output[position] = alphabet[Int(group >> 18 & 0x3F)]
                output[position + 1] = alphabet[Int(group >> 12 & 0x3F)]
                output[position + 2] = remaining > 1 ? alphabet[Int(group >> 6 & 0x3F)] : UInt8(ascii: "=")
                output[position + 3] = remaining > 2 ? alphabet[Int(group & 0x3F)] : UInt8(ascii: "=")
                position += 4
                index += 3
            }
            return size
        }
    }
}
