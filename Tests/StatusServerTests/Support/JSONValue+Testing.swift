import StatusCore

extension JSONValue {
    /// The member `key` of an object, or `.null`.
    subscript(key: String) -> JSONValue {
        if case .object(let fields) = self { return fields[key] ?? .null }
        return .null
    }

    /// The element at `index` of an array, or `.null`.
    subscript(index: Int) -> JSONValue {
        if case .array(let items) = self, items.indices.contains(index) { return items[index] }
        return .null
    }

    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var int: Int64? {
        if case .int(let value) = self { return value }
        return nil
    }

    var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    var array: [JSONValue] {
        if case .array(let items) = self { return items }
        return []
    }

    /// The strings of an array.
    var strings: [String] { array.compactMap(\.string) }

    var isNull: Bool { self == .null }

    /// True when the object has the key at all (even `null`).
    func has(_ key: String) -> Bool {
        if case .object(let fields) = self { return fields[key] != nil }
        return false
    }
}
