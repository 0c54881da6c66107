import CHiredis
import NIOCore

/// Decodes RESP2 replies with hiredis's reader (`redisReaderCreate` / `redisReaderFeed` / `redisReaderGetReply`).
///
/// Feed bytes as they arrive, then call ``next()`` until it returns `nil`. The reader copies what it is fed, so the
/// caller's buffer may be reused at once. Not thread-safe: use one decoder from one thread (or event loop) at a time.
public final class RedisReplyDecoder {
    private let reader: UnsafeMutablePointer<redisReader>

    /// Creates a decoder with an empty buffer.
    public init() {
        guard let reader = redisReaderCreate() else {
            fatalError("redisReaderCreate failed (out of memory)")
        }
        self.reader = reader
    }

    deinit {
        redisReaderFree(self.reader)
    }

    /// Appends bytes received from the server.
    public func feed(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.feed(rawBytes: $0) }
    }

    /// Appends the readable bytes of `buffer` (without moving its reader index).
    func feed(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { self.feed(rawBytes: $0) }
    }

    private func feed(rawBytes: UnsafeRawBufferPointer) {
        guard let base = rawBytes.baseAddress, rawBytes.count > 0 else {
            return
        }
        // Fails only when the reader is already in its error state, which `next()` reports.
        _ = redisReaderFeed(self.reader, base.assumingMemoryBound(to: CChar.self), rawBytes.count)
    }

    /// Returns the next complete reply, or `nil` when more bytes are needed.
    ///
    /// - Throws: ``RedisClientError`` of kind `.protocolError` when the bytes are not valid RESP; the decoder stays
    ///   in that error state and the connection should be closed.
    public func next() throws -> RedisValue? {
        var replyPointer: UnsafeMutableRawPointer?
        guard redisReaderGetReply(self.reader, &replyPointer) == REDIS_OK else {
            let message = withUnsafeBytes(of: self.reader.pointee.errstr) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            throw RedisClientError(kind: .protocolError, message: message.isEmpty ? "invalid RESP reply" : message)
        }
        guard let replyPointer else {
            return nil
        }
        defer { freeReplyObject(replyPointer) }
        return Self.value(of: replyPointer.assumingMemoryBound(to: redisReply.self))
    }

    private static func value(of pointer: UnsafePointer<redisReply>) -> RedisValue {
        let reply = pointer.pointee
        switch reply.type {
        case REDIS_REPLY_STRING:
            return .bulkString(Self.bytes(reply.str, reply.len))
        case REDIS_REPLY_STATUS:
            return .simpleString(String(decoding: Self.bytes(reply.str, reply.len), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            return .error(String(decoding: Self.bytes(reply.str, reply.len), as: UTF8.self))
        case REDIS_REPLY_INTEGER:
            return .integer(Int64(reply.integer))
        case REDIS_REPLY_ARRAY:
            var values: [RedisValue] = []
            values.reserveCapacity(reply.elements)
            for index in 0..<reply.elements {
                if let element = reply.element[index] {
                    values.append(Self.value(of: element))
                } else {
                    values.append(.null)
                }
            }
            return .array(values)
        default:
            return .null
        }
    }

    private static func bytes(_ pointer: UnsafeMutablePointer<CChar>?, _ length: Int) -> [UInt8] {
        guard let pointer, length > 0 else {
            return []
        }
        return Array(UnsafeRawBufferPointer(start: pointer, count: length))
    }
}
