/// The last status versions written to one device's socket, with when (the session's monotonic ms): what a device
/// whose socket closed under it had already been sent, so that its resume does not send again a version it has
/// (SPEC §7: only users whose version moved while it was away).
///
/// Bounded (``capacity`` entries, the oldest forgotten first): a resume is exact for the changes of the last moments
/// before the loss, which are the ambiguous ones (``ResumePoint``); older ones are before the resume point anyway.
struct RecentDeliveries: Sendable, Equatable {
    static let capacity = 16

    struct Entry: Sendable, Equatable {
        var userId: String
        var version: Int64
        var atMs: Int64
    }

    private(set) var entries: [Entry] = []

    /// Records that `version` of `userId` was written to the socket at `atMs`.
    mutating func record(userId: String, version: Int64, atMs: Int64) {
        if let index = entries.firstIndex(where: { $0.userId == userId }) { entries.remove(at: index) }
        if entries.count == Self.capacity { entries.removeFirst() }
        entries.append(Entry(userId: userId, version: version, atMs: atMs))
    }

    /// The versions written at or after `sinceMs`, by user.
    func versions(since sinceMs: Int64) -> [String: Int64] {
        var result: [String: Int64] = [:]
        for entry in entries where entry.atMs >= sinceMs { result[entry.userId] = entry.version }
        return result
    }
}
