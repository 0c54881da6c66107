/// The last status versions written to one device's socket, with when (the session's monotonic ms): what a device
/// whose socket closed under it had already been sent, so that its resume does not send again a version it has
/// (SPEC §7: only users whose version moved while it was away).
///
/// Bounded: the last ``capacity`` writes, in a ring, the oldest overwritten first. A resume is exact for the changes of
/// the last moments before the loss, which are the ambiguous ones (``ResumePoint``); older ones are before the resume
/// point anyway, and a version forgotten here is at worst sent again (same version, harmless, SPEC §2).
///
/// ``record(userId:version:atMs:)`` runs once per delivery, so it does no search: a user written twice holds two
/// entries, and ``versions(since:)`` keeps the later one.
struct RecentDeliveries: Sendable, Equatable {
    static let capacity = 16

    struct Entry: Sendable, Equatable {
        var userId: String
        var version: Int64
        var atMs: Int64
    }

    private var ring: [Entry] = []
    /// Where the next entry goes once the ring is full (then also the oldest entry).
    private var next = 0

    /// The entries, oldest first.
    var entries: [Entry] { ring.count < Self.capacity ? ring : Array(ring[next...] + ring[..<next]) }

    /// Records that `version` of `userId` was written to the socket at `atMs`.
    mutating func record(userId: String, version: Int64, atMs: Int64) {
        let entry = Entry(userId: userId, version: version, atMs: atMs)
        if ring.count < Self.capacity {
            if ring.isEmpty { ring.reserveCapacity(Self.capacity) }
            ring.append(entry)
        } else {
            ring[next] = entry
            next = next == Self.capacity - 1 ? 0 : next + 1
        }
    }

    /// The versions written at or after `sinceMs`, by user (the latest write of each).
    func versions(since sinceMs: Int64) -> [String: Int64] {
        var result: [String: Int64] = [:]
        for entry in entries where entry.atMs >= sinceMs { result[entry.userId] = entry.version }
        return result
    }
}
