import NIOCore

/// Server-side WebSocket frames written as bytes (RFC 6455 §5.2).
///
/// Server frames are never masked, so one encoded frame can be written, unchanged and without a copy, to every socket
/// that must receive it: the fan-out encodes each event once and shares its bytes with all recipients. The device
/// pipeline therefore has no frame encoder; everything it writes is already a frame.
enum WebSocketWire {
    /// The opcodes statusd reads or writes.
    enum Opcode: UInt8, Sendable {
        case continuation = 0x0
        case text = 0x1
        case binary = 0x2
        case close = 0x8
        case ping = 0x9
        case pong = 0xA
    }

    /// Close codes statusd sends (RFC 6455 §7.4.1).
    enum CloseCode: UInt16, Sendable {
        case normal = 1000
        case goingAway = 1001
        case protocolError = 1002
        case invalidPayload = 1007
        case policyViolation = 1008
        case messageTooBig = 1009
        case serverError = 1011
        case serviceRestart = 1012
        case tryAgainLater = 1013
    }

    /// What is wrong with a peer's close frame payload (RFC 6455 §5.5.1, §7.4): nil when it is empty or carries a
    /// code a peer may send and a UTF-8 reason; `protocolError` for one byte or a code that must not appear on the wire
    /// (below 1000, 1004–1006, 1015, unassigned ones up to 2999, 5000 and above); `invalidPayload` for a reason that is
    /// not UTF-8.
    static func closeProblem(_ payload: ByteBuffer) -> CloseCode? {
        guard payload.readableBytes > 0 else { return nil }
        guard let code = payload.getInteger(at: payload.readerIndex, as: UInt16.self) else { return .protocolError }
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: break
        default: return .protocolError
        }
        let reason = payload.getBytes(at: payload.readerIndex + 2, length: payload.readableBytes - 2) ?? []
        return String(validating: reason, as: UTF8.self) == nil ? .invalidPayload : nil
    }

    /// The code of a peer's valid close frame, to answer with the same (RFC 6455 §5.5.1); 1000 when it carried none.
    static func closeCode(_ payload: ByteBuffer) -> UInt16 {
        payload.getInteger(at: payload.readerIndex, as: UInt16.self) ?? CloseCode.normal.rawValue
    }

    /// Bytes of the longest header of an unmasked frame.
    static let maxHeaderBytes = 10

    /// Writes the header of a final, unmasked frame carrying `length` payload bytes.
    static func writeHeader(_ opcode: Opcode, length: Int, into buffer: inout ByteBuffer) {
        buffer.writeInteger(0x80 | opcode.rawValue)
        switch length {
        case ..<126:
            buffer.writeInteger(UInt8(length))
        case ...0xFFFF:
            buffer.writeInteger(UInt8(126))
            buffer.writeInteger(UInt16(length))
        default:
            buffer.writeInteger(UInt8(127))
            buffer.writeInteger(UInt64(length))
        }
    }

    /// A whole frame around `payload`.
    static func frame(_ opcode: Opcode, payload: ByteBuffer, allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: payload.readableBytes + maxHeaderBytes)
        writeHeader(opcode, length: payload.readableBytes, into: &buffer)
        buffer.writeImmutableBuffer(payload)
        return buffer
    }

    /// A text frame holding `text`.
    static func text(_ text: String, allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        let length = text.utf8.count
        var buffer = allocator.buffer(capacity: length + maxHeaderBytes)
        writeHeader(.text, length: length, into: &buffer)
        buffer.writeString(text)
        return buffer
    }

    /// A text frame of UTF-8 bytes (written by ``JSONOutput``).
    static func text(_ bytes: [UInt8], allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: bytes.count + maxHeaderBytes)
        writeHeader(.text, length: bytes.count, into: &buffer)
        buffer.writeBytes(bytes)
        return buffer
    }

    /// A close frame with a code and a short reason (cut to the 123 bytes a control frame allows).
    static func close(_ code: CloseCode, reason: String = "", allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        close(code: code.rawValue, reason: reason, allocator: allocator)
    }

    /// A close frame with any valid code, to echo a peer's (RFC 6455 §5.5.1).
    static func close(code: UInt16, reason: String = "", allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        let reasonBytes = reason.utf8.prefix(123)
        var buffer = allocator.buffer(capacity: 4 + reasonBytes.count)
        writeHeader(.close, length: 2 + reasonBytes.count, into: &buffer)
        buffer.writeInteger(code)
        buffer.writeBytes(reasonBytes)
        return buffer
    }
}
