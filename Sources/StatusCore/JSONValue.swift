/// Any JSON value, decoded strictly (a number is never read as a boolean or the reverse).
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The deepest nesting decoded at all; deeper input is a decoding error. Request bodies are held to far less before
    /// decoding (``StrictJSON``); this bound protects every other path (device frames, stored values).
    public static let maxDecodingDepth = 64

    /// Decodes by asking for the container kind first (object, array, then scalars), so that each level is decoded once:
    /// trying `[JSONValue]` and then `[String: JSONValue]` on failure would decode nested input again at every level,
    /// which costs time exponential in the depth.
    public init(from decoder: any Decoder) throws {
        // A value inside the deepest allowed container sits at this coding path depth; one past it is a container
        // too many (objects and arrays alike: each level adds one key or index).
        if decoder.codingPath.count > Self.maxDecodingDepth {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "JSON nested too deeply"))
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            var fields: [String: JSONValue] = [:]
            for key in object.allKeys {
                fields[key.stringValue] = try object.decode(JSONValue.self, forKey: key)
            }
            self = .object(fields)
            return
        }
        if var array = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !array.isAtEnd {
                items.append(try array.decode(JSONValue.self))
            }
            self = .array(items)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Any object key.
    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { return nil }
    }
}
