import StatusCore

/// SPEC §7 resume: the moment from which a reconnecting device is brought up to date, and the rules that find it.
///
/// The welcome's `resume` token is the session's connection id (random, opaque to the device). When the session loses
/// its socket, the node stores a resume point under the user and device (``UserKeys/resume(_:)``) that expires after
/// `heartbeatTimeoutSeconds`. A reconnect presenting the token is then sent, right after its welcome, the current status
/// of every user it may hear about whose version moved since ``lostAt``. The token grants nothing by itself: what is
/// sent is decided by the new session's own rights, so a guessed or altered token at most repeats current statuses
/// the device may read anyway.
struct ResumePoint: Sendable, Equatable {
    /// The connection id of the session that lost its socket (its `resume` token).
    var connection: String
    /// Epoch ms from which changes are resent: the session's last sign of life, less ``clockMargin``.
    var lostAt: Int64
    /// Versions the socket was sent from ``lostAt`` on, before it closed under the node (``RecentDeliveries``), by
    /// ``userKey(_:)``: a status still at that version did not move while the device was away, and is not sent again.
    var delivered: [UInt64: Int64] = [:]
    /// Whom the lost session heard about when it lost its socket (nil: not recorded, a point stored by an earlier
    /// version or taken from a replaced connection): a user the device hears about now and did not then is news
    /// whatever their version did, since the device never had their state (SPEC §7: it started hearing about them
    /// through a subscription, a friendship, a block lifted or a wider presence scope while it was away).
    var audience: Audience? = nil

    /// Whom a session heard about, as a resume point keeps it: for an `all` scope, everyone but the users on either
    /// side of a block (`keys` are those); otherwise the users in `keys`, its own user among them. Users are kept by
    /// ``ResumePoint/userKey(_:)``.
    struct Audience: Sendable, Equatable {
        var appWide: Bool
        var keys: Set<UInt64>

        /// Whether the session heard about `userId`.
        func heard(_ userId: String) -> Bool {
            let listed = keys.contains(ResumePoint.userKey(userId))
            return appWide ? !listed : listed
        }

        /// The audience of a session of `userId` with `scope` under `config`: the users of its relationships and itself
        /// (`facts`, ``FanoutIndex/watched(by:including:)``) that it hears about (SPEC §6), or, for an `all` scope,
        /// everyone but `blocked`. A `roles:` scope keeps its relationships only: a user it heard through a role is
        /// taken as new on a resume, and resent (harmless, SPEC §2).
        static func of(userId: String, scope: PresenceScope, facts: [Entitlement.Facts], blocked: Set<String>, config: AppConfig) -> Audience {
            if case .all = scope, config.allowsStatusQuery {
                return Audience(appWide: true, keys: Set(blocked.filter { $0 != userId }.map(ResumePoint.userKey)))
            }
            var keys: Set<UInt64> = [ResumePoint.userKey(userId)]
            for fact in facts where fact.isSelf || Entitlement.hears(fact, role: nil, scope: scope, config: config) {
                keys.insert(ResumePoint.userKey(fact.userId))
            }
            return Audience(appWide: false, keys: keys)
        }
    }

    /// Subtracted from every moment a node measures, so that a node clock slightly ahead of Redis's (which stamps
    /// version changes) never makes a change look older than the loss. Resending a status the device had is harmless
    /// (same version, SPEC §2); missing one is not.
    static let clockMargin: Int64 = 1000

    /// The longest token accepted; anything longer, or with other characters than a connection id has, is ignored.
    static let maxTokenLength = 64

    /// The stored form, `"<connection> <lostAt>"` and one `#<key>:<version>` per delivered version, the key in hex
    /// (`#` is in no userId, SPEC §1); then the audience, when recorded: `~a` (an `all` scope) or `~l` (a list), and
    /// one `@<key>` per user of ``Audience/keys``.
    var stored: String {
        var text = connection
        text += " "
        text += String(lostAt)
        Self.appendTail(delivered: delivered, audience: audience, to: &text)
        return text
    }

    /// Appends the parts of the stored form after the moment, each after a space, to `text`: written in place, as a
    /// departing device's point is on every disconnect.
    static func appendTail(delivered: [UInt64: Int64], audience: Audience?, to text: inout String) {
        text.reserveCapacity(text.utf8.count + 24 * delivered.count + 18 * (audience?.keys.count ?? 0) + 3)
        for (key, version) in delivered.sorted(by: { $0.key < $1.key }) {
            text += " #"
            text += String(key, radix: 16)
            text += ":"
            text += String(version)
        }
        guard let audience else { return }
        text += audience.appWide ? " ~a" : " ~l"
        for key in audience.keys.sorted() {
            text += " @"
            text += String(key, radix: 16)
        }
    }

    /// A resume point as a departing session leaves it for `devices_remove.lua`, which stores it with its moment taken
    /// on Redis's clock: `lostAgoMs` before the script runs. Every version change is stamped on that clock (`vt`,
    /// `pt`), so a node whose wall clock runs ahead of Redis's cannot take a change made after the loss for one made
    /// before it, and a departure that waited in the node's queue is not dated from when it was written. The node
    /// measures the time since the session's last sign of life on its monotonic clock, and adds ``clockMargin``.
    struct Pending: Sendable, Equatable {
        var connection: String
        var lostAgoMs: Int64
        var delivered: [UInt64: Int64] = [:]
        var audience: Audience? = nil

        /// The stored form without its moment, `"<connection> <the rest>"`, which the script completes.
        var scriptArgument: String {
            var text = connection
            ResumePoint.appendTail(delivered: delivered, audience: audience, to: &text)
            return text
        }

        /// The point the script stores when it runs at `nowMs` on Redis's clock.
        func stored(atRedisMs nowMs: Int64) -> ResumePoint {
            ResumePoint(connection: connection, lostAt: nowMs - lostAgoMs, delivered: delivered, audience: audience)
        }
    }

    init(connection: String, lostAt: Int64, delivered: [UInt64: Int64] = [:], audience: Audience? = nil) {
        self.connection = connection
        self.lostAt = lostAt
        self.delivered = delivered
        self.audience = audience
    }

    /// Parses the stored form; nil when it is not one. A point stored by an earlier version names users by their
    /// userId (`<userId>:<version>`): read as the userId's key.
    init?(stored: String) {
        let parts = stored.split(separator: " ")
        guard parts.count >= 2, let lostAt = Int64(parts[1]) else { return nil }
        self.connection = String(parts[0])
        self.lostAt = lostAt
        for part in parts.dropFirst(2) {
            if part == "~a" || part == "~l" {
                audience = Audience(appWide: part == "~a", keys: [])
                continue
            }
            if part.first == "@" {
                guard audience != nil, let key = UInt64(part.dropFirst(), radix: 16) else { return nil }
                audience?.keys.insert(key)
                continue
            }
            guard let colon = part.lastIndex(of: ":"), let version = Int64(part[part.index(after: colon)...]) else { return nil }
            let user = part[..<colon]
            if user.first == "#" {
                guard let key = UInt64(user.dropFirst(), radix: 16) else { return nil }
                delivered[key] = version
            } else {
                delivered[Self.userKey(String(user))] = version
            }
        }
    }

    /// A user's 64-bit key: FNV-1a over the userId's bytes, the same on every node and in every process (a resume may
    /// be served by another node than the one that recorded the point). Two users sharing a key (odds near 2⁻⁶⁴ a
    /// pair) would at worst have one change not resent to a resuming device when both were at the same version.
    static func userKey(_ userId: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in userId.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// Whether `token` could be a connection id at all (letters, digits, `-`; 1–64 chars): others are ignored unread.
    static func isPlausible(token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= maxTokenLength
            && token.utf8.allSatisfy { $0 == UInt8(ascii: "-") || ($0 >= 48 && $0 <= 57) || (($0 | 0x20) >= 97 && ($0 | 0x20) <= 122) }
    }

    /// The point a device presenting `token` resumes from, or nil (a plain connect).
    ///
    /// - `stored`: the resume point recorded when the session's departure was filed, if it has not expired;
    /// - `replaced`: the record this connect replaced under the same deviceId. When it is still the token's connection,
    ///   its departure was never filed (its node died or has not noticed yet): the device is brought up to date from
    ///   when that connection was made.
    static func since(token: String, stored: ResumePoint?, replaced: DeviceRecord?) -> ResumePoint? {
        if let stored, stored.connection == token { return stored }
        if let replaced, replaced.kind == .webSocket, replaced.connection == token, let connectedAt = replaced.connectedAt {
            return ResumePoint(connection: token, lostAt: connectedAt - clockMargin)
        }
        return nil
    }

    /// Whether a status at `version`, whose version last moved at `versionTime`, is news to the resuming device: it
    /// moved since ``lostAt``, or the lost session did not hear about the user (``audience``), and it is not the version
    /// the socket was sent before it closed.
    func isNews(userId: String, version: Int64, versionTime: Int64?) -> Bool {
        let new = audience.map { !$0.heard(userId) } ?? false
        return (new || Self.moved(versionTime: versionTime, since: lostAt)) && delivered[Self.userKey(userId)] != version
    }

    /// Whether a status whose version last moved at `versionTime` changed while the device was away (a status that
    /// last moved before version times were recorded did not).
    static func moved(versionTime: Int64?, since: Int64) -> Bool {
        guard let versionTime else { return false }
        return versionTime >= since
    }
}
