import NIOCore

/// The client side of RFC 6455 framing, as little as a simulated device needs: the upgrade request, masked frames to
/// write, and the header of an (unmasked) server frame. Hand-written so a device is one channel handler with no
/// HTTP codec or upgrader left in its pipeline once connected.
enum WebSocketClientFrames {
    enum Opcode: UInt8 {
        case continuation = 0x0
        case text = 0x1
        case binary = 0x2
        case close = 0x8
        case ping = 0x9
        case pong = 0xA
    }

    /// A fixed `Sec-WebSocket-Key`: the loader does not check the server's accept value, only its `101` status.
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    /// `GET <target>` asking to upgrade to WebSocket.
    static func upgradeRequest(target: String, host: String, allocator: ByteBufferAllocator) -> ByteBuffer {
        let text =
            "GET \(target) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
        return allocator.buffer(string: text)
    }

    /// A complete (FIN) masked frame carrying `payload`.
    static func frame(_ opcode: Opcode, payload: some Collection<UInt8>, allocator: ByteBufferAllocator) -> ByteBuffer {
        let count = payload.count
        var buffer = allocator.buffer(capacity: count + 14)
        buffer.writeInteger(0x80 | opcode.rawValue)
        if count < 126 {
            buffer.writeInteger(UInt8(0x80 | count))
        } else if count <= 0xFFFF {
            buffer.writeInteger(UInt8(0x80 | 126))
            buffer.writeInteger(UInt16(count))
        } else {
            buffer.writeInteger(UInt8(0x80 | 127))
            buffer.writeInteger(UInt64(count))
        }
        let mask = UInt32.random(in: .min ... .max)
        buffer.writeInteger(mask)
        let maskBytes = [UInt8(mask >> 24), UInt8((mask >> 16) & 0xFF), UInt8((mask >> 8) & 0xFF), UInt8(mask & 0xFF)]
        var offset = 0
        for byte in payload {
            buffer.writeInteger(byte ^ maskBytes[offset & 3])
            offset += 1
        }
        return buffer
    }

    /// The header of a frame at the start of `buffer`'s readable bytes, or nil until all of it has arrived.
    struct Header {
        var fin: Bool
        var opcode: UInt8
        var headerLength: Int
        var payloadLength: Int
        /// The masking key, when the frame is masked (a server should not mask; handled anyway).
        var mask: UInt32?

        init?(_ buffer: ByteBuffer) {
            let readable = buffer.readableBytes
            guard readable >= 2, let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
                let second = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt8.self)
            else { return nil }
            fin = first & 0x80 != 0
            opcode = first & 0x0F
            var length = Int(second & 0x7F)
            var cursor = 2
            if length == 126 {
                guard let extended = buffer.getInteger(at: buffer.readerIndex + 2, as: UInt16.self) else { return nil }
                length = Int(extended)
                cursor = 4
            } else if length == 127 {
                guard let extended = buffer.getInteger(at: buffer.readerIndex + 2, as: UInt64.self), extended < 1 << 40 else { return nil }
                length = Int(extended)
                cursor = 10
            }
            if second & 0x80 != 0 {
                guard let key = buffer.getInteger(at: buffer.readerIndex + cursor, as: UInt32.self) else { return nil }
                mask = key
                cursor += 4
            }
            headerLength = cursor
            payloadLength = length
        }
    }

    /// Unmasks `buffer`'s readable bytes in place.
    static func unmask(_ buffer: inout ByteBuffer, key: UInt32) {
        let maskBytes = [UInt8(key >> 24), UInt8((key >> 16) & 0xFF), UInt8((key >> 8) & 0xFF), UInt8(key & 0xFF)]
        buffer.withUnsafeMutableReadableBytes { bytes in
            for index in 0..<bytes.count { bytes[index] ^= maskBytes[index & 3] }
        }
    }
}
