/// A single pass over raw JSON bytes that measures how deeply arrays and objects nest, stopping as soon as a limit is
/// passed.
///
/// Decoders recurse once per level, so a body nested 100,000 levels deep (well within the 1 MiB body limit) could cost a
/// stack overflow or seconds of CPU. This scan runs before any decoder sees the bytes, uses no recursion and no
/// allocation, and gives up at the first level past the limit. It does not validate the JSON: the decoder that runs
/// afterwards does.
public enum JSONNesting {
    /// The deepest nesting any JSON body of the API may have (SPEC §1's deepest rule, profile `metadata` ≤ 16 levels,
    /// sits one level inside the body, so 32 leaves room and refuses nothing legitimate).
    public static let maxBodyDepth = 32

    /// The deepest nesting of arrays and objects in `bytes`, or nil as soon as it passes `limit`.
    @inlinable
    public static func depth(of bytes: some Sequence<UInt8>, limit: Int) -> Int? {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return nil }
                deepest = max(deepest, depth)
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
            default:
                break
            }
        }
        return deepest
    }

    /// Throws `INVALID_REQUEST` when `bytes` nest deeper than `limit`.
    @inlinable
    public static func check(_ bytes: some Sequence<UInt8>, limit: Int = maxBodyDepth) throws(StatusError) {
        guard depth(of: bytes, limit: limit) != nil else {
            throw StatusError(.invalidRequest, "JSON nested deeper than \(limit) levels")
        }
    }
}

extension JSONValue {
    /// How many levels of arrays and objects this value nests (0 for a scalar, 1 for `{}` or `{"a": 1}`).
    public var depth: Int {
        var deepest = 0
        var stack: [(JSONValue, Int)] = [(self, 0)]
        while let (value, level) = stack.popLast() {
            switch value {
            case .array(let items):
                deepest = max(deepest, level + 1)
                stack += items.map { ($0, level + 1) }
            case .object(let fields):
                deepest = max(deepest, level + 1)
                stack += fields.values.map { ($0, level + 1) }
            default:
                break
            }
        }
        return deepest
    }
}
