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
