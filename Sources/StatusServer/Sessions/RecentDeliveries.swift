/// The last status versions written to one device's socket, with when (the session's monotonic ms): what a device
/// whose socket closed under it had already been sent, so that its resume does not send again a version it has
/// (SPEC §7: only users whose version moved while it was away).
///
/// Bounded: the last ``capacity`` writes, in a ring, the oldest overwritten first. A resume is exact for the changes of
/// the last moments before the loss, which are the ambiguous ones (``ResumePoint``); older ones are before the resume
/// point anyway, and a version forgotten here is at worst sent again (same version, harmless, SPEC §2).
///
/// ``record(user:version:atMs:)`` runs once per delivery, on a socket the fan-out has not touched for a while, so it is
/// one store and nothing else: the entries are plain values (the user as its ``ResumePoint/userKey(_:)``, computed
/// once per event, not a `String` to retain and release), kept in memory of the ring's own, never searched; a user
/// written twice holds two entries and ``versions(since:)`` keeps the later one. In workload W a `String` entry in an
/// `Array`, searched by user, cost 4 % of a node's CPU (`perf record`), most of it waiting on memory.
struct RecentDeliveries: ~Copyable {
    static let capacity = 16

    struct Entry: Equatable {
        var user: UInt64
        var version: Int64
        var atMs: Int64
    }

    private let slots: UnsafeMutablePointer<Entry>
    private var count = 0
    /// Where the next entry goes (once the ring is full, also the oldest entry).
    private var next = 0

    init() {
        slots = .allocate(capacity: Self.capacity)
    }

    deinit {
        slots.deallocate()
    }

    /// The entries, oldest first.
    var entries: [Entry] {
        let start = count < Self.capacity ? 0 : next
        return (0..<count).map { slots[(start + $0) % Self.capacity] }
    }

    /// Records that `version` of `user` (its ``ResumePoint/userKey(_:)``) was written to the socket at `atMs`.
    mutating func record(user: UInt64, version: Int64, atMs: Int64) {
        // A trivial type: initializing over an earlier entry needs no release of it.
        (slots + next).initialize(to: Entry(user: user, version: version, atMs: atMs))
        next = next == Self.capacity - 1 ? 0 : next + 1
        if count < Self.capacity { count += 1 }
    }

    /// The versions written at or after `sinceMs`, by user key (the latest write of each).
    func versions(since sinceMs: Int64) -> [UInt64: Int64] {
        var result: [UInt64: Int64] = [:]
        for entry in entries where entry.atMs >= sinceMs { result[entry.user] = entry.version }
        return result
    }
}
