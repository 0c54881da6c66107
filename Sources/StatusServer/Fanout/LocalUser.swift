/// What this node keeps about a user who has a session here: their sessions and the relationships that decide what
/// they hear (SPEC §6), loaded from Redis when their first session starts and reloaded when the bus says they changed.
struct LocalUser: Sendable {
    var sessions: [String: DeviceSession] = [:]
    /// Users this user subscribes to.
    var subscriptions: Set<String> = []
    /// This user's friends.
    var friends: Set<String> = []
    /// Users on either side of a block with this user.
    var blocked: Set<String> = []
    /// Users whose block with this user was heard on the bus (``BlockMask``): kept in ``blocked`` whatever a reload
    /// reads, until the end of the mask is heard or a gap has every relationship read again.
    var pinnedMasks: Set<String> = []
    /// The sequence number of the relationship load applied last: an older load finishing later is ignored.
    var relationsSequence: UInt64 = 0
    /// The user was deleted while these sessions were here (they are closing): the relationships were dropped, a load
    /// begun before the deletion (numbered at or below ``loadsReadBefore``) is ignored, and the next session to join is
    /// a user created again under the id, whose relationships are read anew.
    var deleted = false
    var loadsReadBefore: UInt64 = 0
}

/// The relationships of one user as read from Redis.
struct Relations: Sendable, Equatable {
    var subscriptions: Set<String>
    var friends: Set<String>
    var blocked: Set<String>
}

/// A user of an app.
struct AppUser: Sendable, Hashable {
    var appId: String
    var userId: String
}
