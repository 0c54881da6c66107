/// The checks SPEC §1 and §4 make on a request before anything is read or written.
public enum RequestRules {
    /// Validates a custom status: `nil` or `""` clears it; more than `maxBytes` UTF-8 bytes is `CUSTOM_STATUS_TOO_LONG`.
    /// Returns the value to store (`nil` to clear).
    public static func customStatus(_ value: String?, maxBytes: Int) throws(StatusError) -> String? {
        guard let value, !value.isEmpty else { return nil }
        guard value.utf8.count <= maxBytes else {
            throw StatusError(.customStatusTooLong, "customStatus is \(value.utf8.count) bytes, the limit is \(maxBytes)")
        }
        return value
    }

    /// Checks a `userIds` list of a batch call against its limit, counting ids as sent, then validates and folds it.
    /// An empty list is `INVALID_REQUEST` unless `allowEmpty`.
    public static func batch(_ userIds: [String], limit: Int, allowEmpty: Bool = false) throws(StatusError) -> [String] {
        if userIds.isEmpty && !allowEmpty { throw StatusError(.invalidRequest, "userIds must not be empty") }
        guard userIds.count <= limit else { throw StatusError(.tooManyUsers, "at most \(limit) user ids per call") }
        return try Identifiers.userIdList(userIds)
    }

    /// Checks a list `limit` (1...100, default 30).
    public static func listLimit(_ raw: String?) throws(StatusError) -> Int {
        guard let raw else { return 30 }
        guard let limit = Int(raw), (1...100).contains(limit) else { throw StatusError(.invalidLimit, "limit must be 1..100") }
        return limit
    }
}
