/// The members of one JSON object a fast reader has met, so that a repeated member declines the fast path.
///
/// A `Set<String>` of the keys did this at the cost of a hash table allocated for every object read: on the delivery
/// path that is every message of the bus, and every device of it. A reader knows its few members by name, so it gives
/// each a number below 64 and asks here whether that number came before.
struct JSONMemberSet {
    private var bits: UInt64 = 0

    /// Records member `ordinal` (0..<64): true the first time, false when the object named it already.
    mutating func first(_ ordinal: Int) -> Bool {
        precondition(ordinal >= 0 && ordinal < 64, "a JSONMemberSet numbers at most 64 members")
        let bit: UInt64 = 1 << UInt64(ordinal)
        guard bits & bit == 0 else { return false }
        bits |= bit
        return true
    }

    /// Whether member `ordinal` was met.
    func contains(_ ordinal: Int) -> Bool {
        bits & (1 << UInt64(ordinal)) != 0
    }
}
