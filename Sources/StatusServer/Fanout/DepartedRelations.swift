/// The relationships of users whose last session on this node left, kept while the node still hears their user
/// channel, so that a device reconnecting here (a flaky network, a churning fleet) needs no read of them: with its
/// user's channel and its relationships' channels still confirmed, its connect is one script call
/// (`device_connect.lua`, which checks the connect rate limit itself) and no admission round trip.
///
/// Kept relationships are only as good as the node's hearing of what changes them. Every relationship change of a user
/// (subscriptions, friends, blocks either way, deletion) is announced on that user's channel, which the node holds on
/// to after the departure (``UnwatchedChannelHold``). So an entry is dropped by: any such announcement naming the user
/// (``forget(_:)``); the channel being dropped; a load of the user's relationships that finished after the departure
/// (its read raced the announcement); a gap in the bus feed (``invalidate(through:)``: nothing read before it is
/// trusted); the deletion of the app. And it is bounded: past ``limit`` entries it starts again empty.
///
/// A pure value: ``FanoutIndex`` keeps it under its lock and feeds it the departures and the invalidations.
struct DepartedRelations: Sendable {
    /// What is kept of a departed user: their relationships as last applied, and the load that read them.
    struct Entry: Sendable, Equatable {
        var relations: Relations
        /// Blocks heard on the bus and not yet seen by a read (``LocalUser/pinnedMasks``).
        var pinnedMasks: Set<String>
        var sequence: UInt64
    }

    /// Most users kept; past it the set starts again empty (each entry is the size of a user's relationships).
    static let limit = 50_000

    private var entries: [AppUser: Entry] = [:]
    /// Loads numbered at or below this one are not trusted (a gap in the bus feed came after them).
    private var trustedAfter: UInt64 = 0

    /// How many users are kept.
    var count: Int { entries.count }

    /// Whether `user`'s relationships are kept (their channel must then stay subscribed until the hold drops it).
    func holds(_ user: AppUser) -> Bool { entries[user] != nil }

    /// A user's last session left: keeps what the node knew of their relationships, unless it was read before the
    /// last gap (or never read).
    mutating func depart(_ user: AppUser, _ entry: Entry) {
        guard entry.sequence > trustedAfter else {
            entries[user] = nil
            return
        }
        if entries.count >= Self.limit { entries = [:] }
        entries[user] = entry
    }

    /// A session of `user` joined while the node hears the user's channel: answers (and gives up) what is kept.
    mutating func take(_ user: AppUser) -> Entry? {
        guard let entry = entries.removeValue(forKey: user), entry.sequence > trustedAfter else { return nil }
        return entry
    }

    /// Something changed or may have changed `users`' relationships, or their channel was dropped.
    mutating func forget(_ users: some Sequence<AppUser>) {
        for user in users { entries[user] = nil }
    }

    /// The app was deleted.
    mutating func forget(appId: String) {
        entries = entries.filter { $0.key.appId != appId }
    }

    /// The bus feed had a gap: no load numbered `sequence` or earlier is trusted from now on (a session departing
    /// later with relationships read before the gap keeps nothing).
    mutating func invalidate(through sequence: UInt64) {
        trustedAfter = max(trustedAfter, sequence)
        entries = [:]
    }
}
