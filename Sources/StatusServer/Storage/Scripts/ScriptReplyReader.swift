import RedisClient

/// Reads a script's array reply front to back, throwing a ``StatusReplyError`` that names the script, the position
/// and what was expected when the reply is too short or a value has the wrong type. Only the twins use it.
struct ScriptReplyReader {
    /// The script, for errors.
    let script: String
    /// The reply's values.
    let values: [RedisValue]
    /// The position of the next value.
    private(set) var index: Int = 0

    /// Starts reading `value`, which must be an array.
    init(_ value: RedisValue, script: String) throws {
        guard case .array(let values) = value else {
            throw StatusReplyError(script: script, problem: "expected an array reply, got \(value.kind)")
        }
        self.script = script
        self.values = values
        self.index = 0
    }

    /// Whether every value was read.
    var isAtEnd: Bool { index >= values.count }

    /// The values not read yet.
    var remaining: ArraySlice<RedisValue> { values[min(index, values.count)...] }

    /// The next value, whatever its type.
    mutating func value() throws -> RedisValue {
        guard index < values.count else {
            throw StatusReplyError(script: script, problem: "too short: no value at position \(index)")
        }
        defer { index += 1 }
        return values[index]
    }

    /// The next value as an integer (an integer reply, or a bulk string holding one, as Redis returns scores).
    mutating func integer() throws -> Int64 {
        let position = index
        let value = try value()
        guard let integer = value.int else { throw mistyped(value, at: position, expected: "an integer") }
        return integer
    }

    /// The next value as a count: a non-negative integer.
    mutating func count() throws -> Int {
        let position = index
        let integer = try integer()
        guard integer >= 0, integer <= values.count else {
            throw StatusReplyError(script: script, problem: "count \(integer) at position \(position) does not fit the reply")
        }
        return Int(integer)
    }

    /// The next value as a flag: `1` true, `0` false.
    mutating func flag() throws -> Bool {
        let position = index
        switch try integer() {
        case 0: return false
        case 1: return true
        case let other: throw StatusReplyError(script: script, problem: "expected 0 or 1 at position \(position), got \(other)")
        }
    }

    /// The next value as a string (a bulk or simple string).
    mutating func string() throws -> String {
        let position = index
        let value = try value()
        guard let string = value.string else { throw mistyped(value, at: position, expected: "a string") }
        return string
    }

    /// The next value as a string, nil for an empty string or a nil reply (what the scripts send for "none").
    mutating func optionalString() throws -> String? {
        let position = index
        let value = try value()
        if value.isNull { return nil }
        guard let string = value.string else { throw mistyped(value, at: position, expected: "a string or nil") }
        return string.isEmpty ? nil : string
    }

    /// The next value as a set of strings (an array reply of members, such as SMEMBERS answers).
    mutating func members() throws -> Set<String> {
        let position = index
        let value = try value()
        guard case .array(let items) = value else { throw mistyped(value, at: position, expected: "an array of members") }
        var members = Set<String>(minimumCapacity: items.count)
        for item in items {
            guard let member = item.string else { throw mistyped(item, at: position, expected: "an array of strings") }
            members.insert(member)
        }
        return members
    }

    /// The next value as what a write did to the status (`0 none | 1 status | 2 devices only`).
    mutating func change() throws -> StatusRepository.Change {
        let position = index
        let raw = try integer()
        guard let change = StatusRepository.Change(rawValue: Int(raw)) else {
            throw StatusReplyError(script: script, problem: "unknown change \(raw) at position \(position)")
        }
        return change
    }

    /// The status reply (`lib.lua` `status_reply`) that ends the reply.
    mutating func statusReply() throws -> StatusReply {
        let rest = remaining
        index = values.count
        do {
            return try StatusReply(rest)
        } catch let error as StatusReplyError {
            throw StatusReplyError(script: script, problem: "status reply: \(error.problem)")
        }
    }

    /// Throws unless every value was read.
    func end() throws {
        guard isAtEnd else {
            throw StatusReplyError(script: script, problem: "\(values.count - index) unexpected values after position \(index - 1)")
        }
    }

    private func mistyped(_ value: RedisValue, at position: Int, expected: String) -> StatusReplyError {
        StatusReplyError(script: script, problem: "expected \(expected) at position \(position), got \(value.kind)")
    }

    /// A reply that must be a single integer.
    static func integer(_ value: RedisValue, script: String) throws -> Int64 {
        guard case .integer(let integer) = value else {
            throw StatusReplyError(script: script, problem: "expected an integer reply, got \(value.kind)")
        }
        return integer
    }
}

extension RedisValue {
    /// The value's type, for errors.
    var kind: String {
        switch self {
        case .null: "nil"
        case .simpleString: "a simple string"
        case .error(let message): "the error \(message)"
        case .integer(let value): "the integer \(value)"
        case .bulkString: "a bulk string"
        case .array(let values): "an array of \(values.count)"
        }
    }
}
