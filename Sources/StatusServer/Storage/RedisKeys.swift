/// The Redis key layout. Every key of one user carries the hash tag `{<appId>:<userId>}` and every app-wide key the
/// tag `{<appId>}`, so each Lua script touches one hash slot only and the layout works on Redis Cluster.
struct RedisKeys: Sendable {
    let appId: String

    /// The app record: config JSON, API key hash, token secret.
    var app: String { "st:{\(appId)}:app" }
    /// Every user of the app (sorted set, score 0, ordered by id).
    var users: String { "st:{\(appId)}:users" }
    /// The users currently online (sorted set, score 0).
    var online: String { "st:{\(appId)}:online" }
    /// The status version last applied to ``online`` per user.
    var onlineVersions: String { "st:{\(appId)}:onlinever" }
    /// The online users with a role (sorted set, score 0, read in id order), per role: what a `roles:` scope's snapshot
    /// reads (SPEC §10.6), written with ``online``.
    func online(role: String) -> String { onlineRolePrefix + role }
    /// The prefix of ``online(role:)``.
    var onlineRolePrefix: String { "st:{\(appId)}:online:role:" }
    /// The role each user in ``online`` is listed under in ``online(role:)`` (hash userId → role).
    var onlineRoles: String { "st:{\(appId)}:onlinerole" }
    /// The users whose status changed lately, by time (``RecentChanges``).
    var recentChanges: String { "st:{\(appId)}:recent" }
    /// Present (with a TTL) while some node holds, or lately held, a session of the app with presence `all` or
    /// `roles:`: only then is ``recentChanges`` written by setSelfStatus (``RecentChanges``).
    var appWideListeners: String { "st:{\(appId)}:appwide" }
    /// Backend-driven devices by heartbeat time (member `userId\ndeviceId`).
    var heartbeats: String { "st:{\(appId)}:hb" }
    /// The due-time index of custom status expiries (SPEC §10.2): member userId, score no later than the
    /// `customStatusExpiresAt` stored for them (epoch ms; every write adds its own with `ZADD LT`, and the sweep reads
    /// the stored value, ``ExpirySweeper``). One per app, in the app's slot: the housekeeping of every node reads it.
    var expiries: String { "st:{\(appId)}:expiries" }
    /// The entries of ``expiries`` being handled, leased to a node: member userId, score when the lease ends.
    var expiryLeases: String { "st:{\(appId)}:expiries:leased" }
    /// The due-time index of offline graces (SPEC §10.3): member userId, score when the grace ends (epoch ms, the
    /// writing node's estimate; `grace_end.lua` holds the exact end). Written before the drop that may start one, so a
    /// grace outlives the node that started it; swept like ``expiries`` (``GraceSweeper``).
    var graces: String { "st:{\(appId)}:graces" }
    /// The entries of ``graces`` being handled, leased to a node: member userId, score when the lease ends.
    var graceLeases: String { "st:{\(appId)}:graces:leased" }

    /// The tombstone of an unfinished deletion of this app (hash: API key digest, since, owner, claimed until); while it
    /// stands the appId cannot be created again. In the app record's slot, so one script swaps one for the other.
    var deletionTombstone: String { "st:{\(appId)}:deleting" }

    /// The app's undelivered webhook events, oldest first (stream; fields `body` and `gen`, the app's generation).
    var webhookStream: String { "st:{\(appId)}:webhooks" }
    /// When each undelivered webhook event is next due (sorted set of stream ids, score = epoch ms on the Redis clock;
    /// an event being delivered is leased: its score is pushed past the lease).
    var webhookDue: String { "st:{\(appId)}:webhooks:due" }
    /// Attempts made per undelivered webhook event that failed at least once (hash: stream id → count).
    var webhookAttempts: String { "st:{\(appId)}:webhooks:attempts" }

    /// The keys of one user of this app.
    func user(_ userId: String) -> UserKeys { UserKeys(tag: "{\(appId):\(userId)}") }

    /// The pattern that matches every key of the app, for deletion.
    var allKeysPatterns: [String] { ["st:{\(appId)}:*", "st:{\(appId):*"] }

    /// The global index from API-key digest to appId.
    static func apiKey(digest: String) -> String { "st:apikey:\(digest)" }
    /// The set of all appIds.
    static let apps = "st:apps"
    /// The appIds that have (or had) backend-driven devices: the only apps the heartbeat sweep visits, so that a node's
    /// background work does not grow with the number of apps. An app leaves it when it is deleted.
    static let backendApps = "st:apps:backend"
    /// The apps with a custom status expiry in their ``expiries``, scored by when the earliest falls due: the apps the
    /// housekeeping sweeps, and only once that time has come (``DueIndexSweep``).
    static let expiringApps = DueApps(kind: "expiring")
    /// The apps with an offline grace in their ``graces``, scored by when the earliest ends.
    static let graceApps = DueApps(kind: "grace")

    /// The apps with a due-time index of one kind (`due_app_mark.lua`): a sorted set of appIds scored by the app's
    /// earliest entry, and a hash of their generations. Both in one slot; `{:due}` cannot be an app's tag (an appId
    /// has no `:`).
    struct DueApps: Sendable, Hashable {
        var kind: String
        var scores: String { "st:{:due}:apps:\(kind)" }
        var generations: String { "st:{:due}:apps:\(kind):gen" }
        /// The set of appIds that once listed every app that ever had such an index (written by earlier versions),
        /// moved into ``scores`` when found.
        var legacy: String { "st:apps:\(kind)" }
    }
    /// Set once the index above was filled from every app's heartbeats (for data written before it existed).
    static let backendAppsIndexed = "st:apps:backend:indexed"
    /// The appIds whose deletion may be unfinished (each has, or had, a ``deletionTombstone``), for the sweep that
    /// finishes them.
    static let deletingApps = "st:apps:deleting"
    /// The apps that have queued webhook events (sorted set, score = the sequence number of the app's last addition),
    /// which every node's dispatcher goes round. `{:webhooks}` cannot be an app's tag (an appId has no `:`).
    static let webhookApps = "st:{:webhooks}:apps"
    /// The sequence the scores of ``webhookApps`` come from.
    static let webhookAppsSequence = "st:{:webhooks}:seq"
}

/// The keys of one user; all in the user's hash slot.
struct UserKeys: Sendable {
    let tag: String

    var profile: String { "st:\(tag):profile" }
    var status: String { "st:\(tag):status" }
    /// A deleted user's versions (SPEC §10.5: versions never go back, across a deletion), from which a user created again
    /// under the id starts (`status_retire.lua`, `profile_put.lua`). Not among ``all``: it is what outlives the user.
    var retiredVersions: String { "st:\(tag):retired" }
    var devices: String { "st:\(tag):devices" }
    var subscriptions: String { "st:\(tag):subs" }
    var friends: String { "st:\(tag):friends" }
    var blocks: String { "st:\(tag):blocks" }
    var blockedBy: String { "st:\(tag):blockedby" }
    /// For each user on the other side of a block (either way), their public version when the block began (SPEC §10.5:
    /// the masked view carries it, unmoving while the block lasts).
    var blockVersions: String { "st:\(tag):blockpv" }
    /// Users who subscribed to this user (a superset: entries may outlive the subscription), so that deleting the user
    /// can remove every subscription to them (SPEC §7). A sorted set with every score 0, not a set: Redis 7.0 keeps a
    /// set of strings as a hash table (about 50 bytes an entry) but a sorted set of up to `zset-max-listpack-entries`
    /// members as a listpack (about 10), which keeps a user with 200 subscribers within docs/scaling.md's budget.
    var subscribers: String { "st:\(tag):subscribedby" }
    /// The reverse index as a set, as written by earlier versions: read and deleted with the user, never written.
    var legacySubscribers: String { "st:\(tag):subscribers" }

    /// Where a WebSocket device that lost its socket may resume from (SPEC §7): `"<connection id> <lost at ms>"`,
    /// expiring `heartbeatTimeoutSeconds` after the loss; one key per device, so it needs no trimming.
    func resume(_ deviceId: String) -> String { "st:\(tag):resume:\(deviceId)" }

    /// The sliding-window log of one rate-limited operation.
    func rateLimit(_ operation: RateLimitedOperation) -> String { "st:\(tag):rl:\(operation.rawValue)" }
    /// The user's accepted device connects, for `connectRateLimit` (SPEC §10.6).
    var connectRateLimit: String { "st:\(tag):rl:connect" }

    /// Every key of the user, for deletion.
    var all: [String] {
        [profile, status, devices, subscriptions, friends, blocks, blockedBy, blockVersions, subscribers, legacySubscribers]
            + RateLimitedOperation.allCases.map(rateLimit)
    }
}

/// The operations SPEC §5 rate-limits, each with its own counter.
enum RateLimitedOperation: String, Sendable, CaseIterable {
    case getUserStatus = "query"
    case subscribe = "sub"
    case unsubscribe = "unsub"
}
