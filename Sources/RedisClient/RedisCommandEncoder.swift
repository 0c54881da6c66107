import CHiredis
import NIOCore

/// Encodes commands as RESP arrays of bulk strings, using hiredis's `redisFormatCommandArgv`.
public enum RedisCommandEncoder {
    /// Returns the RESP bytes of one command, e.g. `["GET", "k"]` gives `*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`.
    public static func encode(_ arguments: [String]) -> [UInt8] {
        withFormattedCommand(arguments) { Array($0) }
    }

    /// Appends the RESP bytes of one command to `buffer`.
    static func encode(_ arguments: [String], into buffer: inout ByteBuffer) {
        withFormattedCommand(arguments) { _ = buffer.writeBytes($0) }
    }

    /// Formats the command with hiredis and lends the formatted bytes to `body`; hiredis's buffer is freed afterwards.
    private static func withFormattedCommand<Result>(_ arguments: [String], _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        // All arguments share one contiguous byte array; argv points into it.
        var storage: [UInt8] = []
        var lengths: [Int] = []
        lengths.reserveCapacity(arguments.count)
        for argument in arguments {
            let before = storage.count
            storage.append(contentsOf: argument.utf8)
            lengths.append(storage.count - before)
        }
        // Keep the storage non-empty so that its base address is never nil (the extra byte is never referenced).
        storage.append(0)
        return storage.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self)
            var argv: [UnsafePointer<CChar>?] = []
            argv.reserveCapacity(arguments.count)
            var offset = 0
            for length in lengths {
                argv.append(base + offset)
                offset += length
            }
            var target: UnsafeMutablePointer<CChar>?
            let length = argv.withUnsafeMutableBufferPointer { argvPointer in
                lengths.withUnsafeBufferPointer { lengthsPointer in
                    redisFormatCommandArgv(&target, Int32(arguments.count), argvPointer.baseAddress, lengthsPointer.baseAddress)
                }
            }
            guard length >= 0, let target else {
                fatalError("redisFormatCommandArgv failed (out of memory)")
            }
            defer { redisFreeCommand(target) }
            return body(UnsafeRawBufferPointer(start: target, count: Int(length)))
        }
    }
}
