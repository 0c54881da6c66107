/// A RESP2 reply value.
///
/// Replies decoded by ``RedisReplyDecoder`` and returned by ``RedisClient`` take this shape. Bulk strings keep their raw
/// bytes; use ``string`` to read them as UTF-8.
public enum RedisValue: Sendable, Hashable {
    /// A null bulk string (`$-1`) or a null array (`*-1`).
    case null
    /// A simple string (`+OK`).
    case simpleString(String)
    /// An error reply (`-ERR ...`), without the leading `-`.
    case error(String)
    /// An integer reply (`:42`).
    case integer(Int64)
    /// A bulk string (`$3\r\nfoo`), as raw bytes.
    case bulkString([UInt8])
    /// An array (`*2 ...`), possibly nested.
    case array([RedisValue])

    /// The value as a string: a simple string, or a bulk string decoded as UTF-8; `nil` for anything else.
    public var string: String? {
        switch self {
        case .simpleString(let string):
            return string
        case .bulkString(let bytes):
            return String(decoding: bytes, as: UTF8.self)
        case .null, .error, .integer, .array:
            return nil
        }
    }

    /// The value as an integer: an integer reply, or a simple or bulk string that parses as `Int64`; `nil` otherwise.
    public var int: Int64? {
        switch self {
        case .integer(let value):
            return value
        case .simpleString, .bulkString:
            return self.string.flatMap { Int64($0) }
        case .null, .error, .array:
            return nil
        }
    }

    /// The elements of an array reply; `nil` for anything else (including a null array).
    public var array: [RedisValue]? {
        if case .array(let values) = self {
            return values
        }
        return nil
    }

    /// The raw bytes of a bulk string, or the UTF-8 bytes of a simple string; `nil` for anything else.
    public var bytes: [UInt8]? {
        switch self {
        case .bulkString(let bytes):
            return bytes
        case .simpleString(let string):
            return Array(string.utf8)
        case .null, .error, .integer, .array:
            return nil
        }
    }

    /// Whether the value is a null bulk string or a null array.
    public var isNull: Bool {
        if case .null = self {
            return true
        }
        return false
    }
}
