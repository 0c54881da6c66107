/// Everything stored about a user's status that any view of it is made of (SPEC §2, §10.1, §10.5).
public struct PresenceRecord: Sendable, Hashable {
    /// The status as it is: statusType, custom status, lastActiveAt, the user's `version`, the devices,
    /// `customStatusExpiresAt`. Its `availability` is ignored: ``availability`` is the chosen one.
    public var status: UserStatus
    /// The availability the user chose (`available` when they chose none).
    public var availability: Availability
    /// The public version (SPEC §10.5): +1 for each change of the public view and at no other time.
    public var publicVersion: Int64
    /// While the user is invisible, what the public sees: the status they had when they stopped being seen online.
    public var hidden: Hidden?
    /// The user's own last-seen privacy (nil: the app default applies).
    public var lastSeenPrivacy: LastSeenPrivacy?
    /// Automatic away holds (SPEC §10.1, §10.4): every connected device reports `idle` or `background` (kept as it
    /// was through an offline grace, SPEC §10.3, when no device is connected).
    public var allDevicesIdle: Bool

    /// What an invisible user shows to others (SPEC §10.5): a user who went offline (or, when they were not online when
    /// they became invisible, what they were then) at `lastActiveAt`. With `offlineGraceSeconds`, becoming invisible
    /// while seen online shows as a drop: until the grace ends, `online` as they were seen then (no device).
    public struct Hidden: Sendable, Hashable {
        /// `offline`, or `unlogined` for a user who had not been online since they last logged out; `online` until the
        /// grace of their becoming invisible ends.
        public var statusType: StatusType
        /// The moment they became invisible, or really left `online`, whichever came first.
        public var lastActiveAt: Int64?
        /// While still seen `online`: the custom status, availability shown and `customStatusExpiresAt` seen then.
        public var customStatus: String?
        public var availability: Availability?
        public var customStatusExpiresAt: Int64?

        public init(
            statusType: StatusType,
            lastActiveAt: Int64?,
            customStatus: String? = nil,
            availability: Availability? = nil,
            customStatusExpiresAt: Int64? = nil
        ) {
            self.statusType = statusType
            self.lastActiveAt = lastActiveAt
            self.customStatus = statusType == .online ? customStatus : nil
            self.availability = statusType == .online ? availability ?? .available : nil
            self.customStatusExpiresAt = statusType == .online ? customStatusExpiresAt : nil
        }
    }

    /// Creates a record; the public version defaults to the version (data written before public versions existed).
    public init(
        status: UserStatus,
        availability: Availability = .available,
        publicVersion: Int64? = nil,
        hidden: Hidden? = nil,
        lastSeenPrivacy: LastSeenPrivacy? = nil,
        allDevicesIdle: Bool = false
    ) {
        self.status = status
        self.availability = availability
        self.publicVersion = publicVersion ?? status.version
        self.hidden = hidden
        self.lastSeenPrivacy = lastSeenPrivacy
        self.allDevicesIdle = allDevicesIdle
    }

    /// Whether the public sees the user as invisible users are seen (SPEC §10.5).
    public var isHidden: Bool { availability == .invisible }

    /// The availability shown: `away` while the user chose `available` and every device is idle (SPEC §10.1).
    public var shownAvailability: Availability {
        availability == .available && allDevicesIdle && status.statusType == .online ? .away : availability
    }
}

/// SPEC §10.5: the status of a user as a class of viewer sees it. The one place that decides what anyone sees of
/// anyone: replies, events, resumes, snapshots, listings, webhooks.
public enum PresenceView: Sendable, Hashable {
    /// The own view: the user themself (their devices, their self-queries, calls made for them through the server
    /// API) and the app's own reads (the backend query, listings, webhooks). Everything as it is.
    case own
    /// The public view, for another user; `isFriend` decides last-seen privacy `friends`.
    case others(isFriend: Bool)
    /// Another user on the other side of a block (either way): the offline mask without `lastActiveAt`, carrying the
    /// public version as it stood when the block began (nil: the current one, for a block stored without it).
    case blocked(publicVersionAtBlock: Int64?)

    /// The status `record` shows to this viewer, under the app's default last-seen privacy.
    public func status(of record: PresenceRecord, appDefault: LastSeenPrivacy) -> UserStatus {
        let truth = record.status
        switch self {
        case .own:
            var own = truth
            own.availability = record.shownAvailability
            return own
        case .blocked(let frozen):
            // The version never goes below what the viewer may have seen before the block (the current public one
            // at that moment), and it stands while the block lasts.
            return UserStatus(
                userId: truth.userId,
                statusType: .offline,
                version: frozen ?? record.publicVersion,
                onlineDevices: truth.onlineDevices == nil ? nil : []
            )
        case .others(let isFriend):
            var seen: UserStatus
            if let hidden = record.hidden, record.isHidden {
                seen = UserStatus(
                    userId: truth.userId,
                    statusType: hidden.statusType,
                    customStatus: hidden.customStatus,
                    lastActiveAt: hidden.lastActiveAt,
                    version: record.publicVersion,
                    onlineDevices: truth.onlineDevices == nil ? nil : [],
                    availability: hidden.availability,
                    customStatusExpiresAt: hidden.customStatus == nil ? nil : hidden.customStatusExpiresAt
                )
            } else if record.isHidden {
                // Invisible without a stored moment (cannot be written so; read defensively): offline, nothing more.
                seen = UserStatus(
                    userId: truth.userId,
                    statusType: truth.statusType == .unlogined ? .unlogined : .offline,
                    version: record.publicVersion,
                    onlineDevices: truth.onlineDevices == nil ? nil : []
                )
            } else {
                seen = truth
                seen.version = record.publicVersion
                seen.availability = truth.statusType == .online ? record.shownAvailability : nil
            }
            let privacy = record.lastSeenPrivacy ?? appDefault
            if seen.lastActiveAt != nil, !privacy.shows(to: .other(isFriend: isFriend)) { seen.lastActiveAt = nil }
            return seen
        }
    }

    /// Whether this view shows `lastActiveAt` of `record` (so that fan-out can group recipients by what they get).
    public var isOwn: Bool { if case .own = self { true } else { false } }
}

/// The users on either side of a block with one viewer (SPEC §4, §10.5), with each one's public version as it stood
/// when the block began (absent: unknown, the current one is shown).
public struct BlockedUsers: Sendable, Hashable {
    public var users: Set<String>
    public var publicVersionsAtBlock: [String: Int64]

    public init(_ users: Set<String> = [], publicVersionsAtBlock: [String: Int64] = [:]) {
        self.users = users
        self.publicVersionsAtBlock = publicVersionsAtBlock
    }

    /// No block on either side.
    public static let none = BlockedUsers()
}

extension PresenceView {
    /// The view `viewer` has of `target`: the one choice every path that shows a user to another makes (getUserStatus
    /// over both transports, the subscribe reply, resumes, snapshots of every scope, fan-out events), so that no path
    /// can show a blocked pair, an invisible user or a user in their grace otherwise than the others do. The own view
    /// for the user themself; the block mask, frozen at the block's public version, where either side blocked the
    /// other; else the public view. A nil `viewer` is a class of viewers known to be neither the target nor on either
    /// side of a block with them (the groups fan-out encodes once, after leaving out both sides of every block).
    ///
    /// `frozen` is the target's public version frozen for this viewer, read from the target's own keys with their status
    /// (a block between the two began there): it masks on its own, and it is the version the mask carries, so that a
    /// view never goes below what the target published before the block, whichever side's keys learnt of it first.
    public static func of(
        _ target: String,
        seenBy viewer: String?,
        blocked: BlockedUsers,
        isFriend: Bool,
        frozen: Int64? = nil
    ) -> PresenceView {
        if viewer == target { return .own }
        if viewer != nil, let frozen { return .blocked(publicVersionAtBlock: frozen) }
        if viewer != nil, blocked.users.contains(target) {
            return .blocked(publicVersionAtBlock: blocked.publicVersionsAtBlock[target])
        }
        return .others(isFriend: isFriend)
    }
}
