import NIOCore

/// Encodes commands as RESP arrays of bulk strings, straight into the outgoing buffer.
///
/// The request side of RESP is one fixed shape (`*<count>\r\n` then `$<length>\r\n<bytes>\r\n` per argument), so it
/// is written here directly: formatting through hiredis's `redisFormatCommandArgv` copied every argument twice, made
/// two allocations and a `sprintf` per argument, and was the largest single cost of a 500-user status read (a sixth of
/// the server's CPU). Replies, the part of the protocol with real parsing, still go through hiredis
/// (``RedisReplyDecoder``); the tests check these bytes against `redisFormatCommandArgv`'s.
public enum RedisCommandEncoder {
    /// Returns the RESP bytes of one command, e.g. `["GET", "k"]` gives `*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`.
    public static func encode(_ arguments: [String]) -> [UInt8] {
        var buffer = ByteBufferAllocator().buffer(capacity: 16 * arguments.count + 16)
        encode(arguments, into: &buffer)
        return Array(buffer.readableBytesView)
    }

    /// Appends the RESP bytes of one command to `buffer`: its size is worked out first, so the buffer is checked and
    /// grown once and every byte is then stored through one pointer.
    public static func encode(_ arguments: [String], into buffer: inout ByteBuffer) {
        let size = size(of: arguments)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { output in
            var position = 0
            func put(_ byte: UInt8) {
                output[position] = byte
                position += 1
            }
            func putDecimal(_ value: Int) {
                let digits = digitCount(value)
                var remaining = value
                var index = position + digits - 1
                repeat {
                    output[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: remaining % 10)
                    remaining /= 10
                    index -= 1
                } while remaining > 0
                position += digits
            }
            put(UInt8(ascii: "*"))
            putDecimal(arguments.count)
            put(UInt8(ascii: "\r"))
            put(UInt8(ascii: "\n"))
            for var argument in arguments {
                argument.withUTF8 { bytes in
                    put(UInt8(ascii: "$"))
                    putDecimal(bytes.count)
                    put(UInt8(ascii: "\r"))
                    put(UInt8(ascii: "\n"))
                    if bytes.count > 0 {
                        UnsafeMutableRawBufferPointer(rebasing: output[position..<(position + bytes.count)])
                            .copyMemory(from: UnsafeRawBufferPointer(bytes))
                        position += bytes.count
                    }
                    put(UInt8(ascii: "\r"))
                    put(UInt8(ascii: "\n"))
                }
            }
            return position
        }
    }

    /// How many bytes ``encode(_:into:)`` writes for `arguments`, so that a buffer can be made the right size at once.
    public static func size(of arguments: [String]) -> Int {
        var size = 3 + digitCount(arguments.count)
        for argument in arguments {
            let length = argument.utf8.count
            size += 5 + digitCount(length) + length
        }
        return size
    }

    /// How many decimal digits a non-negative count has.
    private static func digitCount(_ value: Int) -> Int {
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        return digits
    }
}
