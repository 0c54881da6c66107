import StatusCore

/// A message on the bus (its channels: ``BusChannels``).
///
/// Durable state lives in Redis; the bus only tells nodes what changed so they can update their in-memory
/// fan-out index and deliver events to their own sessions. The wire format is JSON, version ``BusMessage/version``,
/// specified in `docs/bus.md`: one object with `"v"` and `"type"` and the fields of that type. Status changes are
/// published by the Lua script that makes them (`lib.lua`'s `publish_status`), everything else by ``EventBus``.
enum BusMessage: Sendable, Hashable {
    /// A user's status changed (`status`), or only their device list did (`devices`).
    case statusChanged(StatusChange)
    /// A user's relationships changed (subscriptions, friends, blocks): nodes holding their sessions reload them.
    /// `since` holds, for users the change may have made them hear about, the version they had when it was made: a
    /// node that starts hearing them delivers what moved past it meanwhile (``FanoutService``).
    case relationsChanged(appId: String, userIds: [String], since: [String: Int64] = [:])
    /// Devices were removed by logout, kick or sweep: the nodes holding them close them with `reason`.
    case devicesClosed(appId: String, userId: String, devices: [ClosedDevice], reason: String)
    /// An app's config changed: nodes drop their cached copy at once.
    case configChanged(appId: String)
    /// A user or a whole app was deleted: sessions go.
    case deleted(appId: String, userId: String?)
    /// A block between `userId` and `viewer` began (`publicVersion`: `userId`'s public version frozen for `viewer`) or
    /// ended (nil): published by `block_side.lua` on `userId`'s channels, in order with their changes, so that a node
    /// stops (or starts again) showing `userId` to `viewer` exactly there (SPEC §10.5). `role`: `userId`'s role when
    /// the block began, so that the viewer's `roles:` sessions that hear of it are shown the mask too.
    case masked(appId: String, userId: String, viewer: String, publicVersion: Int64?, role: String? = nil)

    /// The wire format version this node writes and reads (`"v"`); messages of another version are ignored.
    static let version = 1
}

/// One status change as published.
struct StatusChange: Sendable, Hashable {
    var appId: String
    /// ``StatusRepository/Change``'s raw value: `status` (1) or `devices` (2); `"status"` or `"devices"` on the wire.
    var change: Int
    /// The changed user's role, for `roles:` presence scopes.
    var role: String?
    /// The changed user's own last-seen privacy (nil: the app default), deciding which recipients see `lastActiveAt`.
    var lastSeenPrivacy: LastSeenPrivacy? = nil
    /// The user's status as it is (the own view), with the availability they chose.
    var status: UserStatus
    /// The public version after the change (SPEC §10.5; nil from a writer that predates it: the version).
    var publicVersion: Int64? = nil
    /// Whether the public view changed: only then is anyone but the user's own devices told.
    var publicChange: Bool = true
    /// While the user is invisible, what the public sees of them.
    var hidden: PresenceRecord.Hidden? = nil
    /// Whether automatic away holds (SPEC §10.1, §10.4).
    var autoAway: Bool = false

    /// Everything the views of the change are made of.
    var record: PresenceRecord {
        PresenceRecord(
            status: status,
            availability: status.availability ?? .available,
            publicVersion: publicVersion,
            hidden: hidden,
            lastSeenPrivacy: lastSeenPrivacy,
            allDevicesIdle: autoAway
        )
    }

    /// The change of a stored status (a catch-up or a resynchronisation), telling the public when `publicChange`.
    init(appId: String, stored: StoredStatus, publicChange: Bool) {
        self.appId = appId
        self.change = StatusRepository.Change.status.rawValue
        self.role = stored.role
        self.lastSeenPrivacy = stored.lastSeenPrivacy
        self.status = stored.status
        self.publicVersion = stored.record.publicVersion
        self.publicChange = publicChange
        self.hidden = stored.record.hidden
        self.autoAway = stored.record.allDevicesIdle
    }

    init(
        appId: String,
        change: Int,
        role: String?,
        lastSeenPrivacy: LastSeenPrivacy? = nil,
        status: UserStatus,
        publicVersion: Int64? = nil,
        publicChange: Bool = true,
        hidden: PresenceRecord.Hidden? = nil,
        autoAway: Bool = false
    ) {
        self.appId = appId
        self.change = change
        self.role = role
        self.lastSeenPrivacy = lastSeenPrivacy
        self.status = status
        self.publicVersion = publicVersion
        self.publicChange = publicChange
        self.hidden = hidden
        self.autoAway = autoAway
    }
}

/// The wire form of ``PresenceRecord/Hidden``.
struct HiddenWire: Codable {
    var statusType: StatusType
    var lastActiveAt: Int64?
    var customStatus: String?
    var availability: Availability?
    var customStatusExpiresAt: Int64?

    init(_ hidden: PresenceRecord.Hidden) {
        statusType = hidden.statusType
        lastActiveAt = hidden.lastActiveAt
        customStatus = hidden.customStatus
        availability = hidden.availability
        customStatusExpiresAt = hidden.customStatusExpiresAt
    }

    var hidden: PresenceRecord.Hidden {
        PresenceRecord.Hidden(
            statusType: statusType,
            lastActiveAt: lastActiveAt,
            customStatus: customStatus,
            availability: availability,
            customStatusExpiresAt: customStatusExpiresAt
        )
    }
}

/// A device whose connection is to be closed.
struct ClosedDevice: Sendable, Hashable, Codable {
    var deviceId: String
    var connection: String
}

/// Why a payload on the bus is not a message this node can act on.
enum BusWireError: Error, Equatable {
    /// Written by a node speaking another version of the format.
    case unsupportedVersion(Int)
    /// A `type` this version does not define.
    case unknownType(String)
    /// A `change` other than `status` or `devices`.
    case unknownChange(String)
}

extension BusMessage: Codable {
    /// The wire format's field names (`docs/bus.md`).
    enum Field: String, CodingKey, CaseIterable {
        case version = "v"
        case type
        case appId
        case userId
        case userIds
        case change
        case role
        case lastSeenPrivacy
        case status
        case devices
        case reason
        case since
        case viewer
        case publicVersion
        case publicChange
        case hidden
        case autoAway

        /// The member's number in a ``JSONMemberSet`` (its place in the list above), for the fast reader.
        var ordinal: Int {
            switch self {
            case .version: 0
            case .type: 1
            case .appId: 2
            case .userId: 3
            case .userIds: 4
            case .change: 5
            case .role: 6
            case .lastSeenPrivacy: 7
            case .status: 8
            case .devices: 9
            case .reason: 10
            case .since: 11
            case .viewer: 12
            case .publicVersion: 13
            case .publicChange: 14
            case .hidden: 15
            case .autoAway: 16
            }
        }
    }

    /// The `type` of each message.
    enum Kind: String {
        case status
        case relations
        case devicesClosed
        case config
        case deleted
        case mask
    }

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: Field.self)
        let version = try fields.decode(Int.self, forKey: .version)
        guard version == Self.version else { throw BusWireError.unsupportedVersion(version) }
        let type = try fields.decode(String.self, forKey: .type)
        let appId = try fields.decode(String.self, forKey: .appId)
        switch Kind(rawValue: type) {
        case .status:
            let name = try fields.decode(String.self, forKey: .change)
            guard let change = StatusRepository.Change(wireName: name) else { throw BusWireError.unknownChange(name) }
            self = .statusChanged(
                StatusChange(
                    appId: appId,
                    change: change.rawValue,
                    role: try fields.decodeIfPresent(String.self, forKey: .role),
                    // A value this version does not know is taken as none: the app default applies.
                    lastSeenPrivacy: try fields.decodeIfPresent(String.self, forKey: .lastSeenPrivacy).flatMap(LastSeenPrivacy.init(rawValue:)),
                    status: try fields.decode(UserStatus.self, forKey: .status),
                    publicVersion: try fields.decodeIfPresent(Int64.self, forKey: .publicVersion),
                    publicChange: try fields.decodeIfPresent(Bool.self, forKey: .publicChange) ?? true,
                    hidden: try fields.decodeIfPresent(HiddenWire.self, forKey: .hidden)?.hidden,
                    autoAway: try fields.decodeIfPresent(Bool.self, forKey: .autoAway) ?? false
                )
            )
        case .relations:
            self = .relationsChanged(
                appId: appId,
                userIds: try fields.decode([String].self, forKey: .userIds),
                since: try fields.decodeIfPresent([String: Int64].self, forKey: .since) ?? [:]
            )
        case .devicesClosed:
            self = .devicesClosed(
                appId: appId,
                userId: try fields.decode(String.self, forKey: .userId),
                devices: try fields.decode([ClosedDevice].self, forKey: .devices),
                reason: try fields.decode(String.self, forKey: .reason)
            )
        case .config:
            self = .configChanged(appId: appId)
        case .deleted:
            self = .deleted(appId: appId, userId: try fields.decodeIfPresent(String.self, forKey: .userId))
        case .mask:
            self = .masked(
                appId: appId,
                userId: try fields.decode(String.self, forKey: .userId),
                viewer: try fields.decode(String.self, forKey: .viewer),
                publicVersion: try fields.decodeIfPresent(Int64.self, forKey: .publicVersion),
                role: try fields.decodeIfPresent(String.self, forKey: .role)
            )
        case nil:
            throw BusWireError.unknownType(type)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var fields = encoder.container(keyedBy: Field.self)
        try fields.encode(Self.version, forKey: .version)
        switch self {
        case .statusChanged(let change):
            try fields.encode(Kind.status.rawValue, forKey: .type)
            try fields.encode(change.appId, forKey: .appId)
            try fields.encode(StatusRepository.Change(rawValue: change.change)?.wireName ?? "status", forKey: .change)
            try fields.encodeIfPresent(change.role, forKey: .role)
            try fields.encodeIfPresent(change.lastSeenPrivacy, forKey: .lastSeenPrivacy)
            try fields.encode(change.status, forKey: .status)
            try fields.encodeIfPresent(change.publicVersion, forKey: .publicVersion)
            try fields.encode(change.publicChange, forKey: .publicChange)
            try fields.encodeIfPresent(change.hidden.map(HiddenWire.init), forKey: .hidden)
            if change.autoAway { try fields.encode(true, forKey: .autoAway) }
        case .relationsChanged(let appId, let userIds, let since):
            try fields.encode(Kind.relations.rawValue, forKey: .type)
            try fields.encode(appId, forKey: .appId)
            try fields.encode(userIds, forKey: .userIds)
            if !since.isEmpty { try fields.encode(since, forKey: .since) }
        case .devicesClosed(let appId, let userId, let devices, let reason):
            try fields.encode(Kind.devicesClosed.rawValue, forKey: .type)
            try fields.encode(appId, forKey: .appId)
            try fields.encode(userId, forKey: .userId)
            try fields.encode(devices, forKey: .devices)
            try fields.encode(reason, forKey: .reason)
        case .configChanged(let appId):
            try fields.encode(Kind.config.rawValue, forKey: .type)
            try fields.encode(appId, forKey: .appId)
        case .deleted(let appId, let userId):
            try fields.encode(Kind.deleted.rawValue, forKey: .type)
            try fields.encode(appId, forKey: .appId)
            try fields.encodeIfPresent(userId, forKey: .userId)
        case .masked(let appId, let userId, let viewer, let publicVersion, let role):
            try fields.encode(Kind.mask.rawValue, forKey: .type)
            try fields.encode(appId, forKey: .appId)
            try fields.encode(userId, forKey: .userId)
            try fields.encode(viewer, forKey: .viewer)
            try fields.encodeIfPresent(publicVersion, forKey: .publicVersion)
            try fields.encodeIfPresent(role, forKey: .role)
        }
    }
}

extension BusMessage {
    /// The `appId` of a `status` message, read from the raw payload without decoding it, or nil for any other
    /// payload. Inside a JSON string every quote is escaped, so the byte sequences `"type":"status"` and `"appId":"`
    /// occur only as members of the envelope (a custom status cannot forge them), and appIds contain no escapes.
    static func statusChangeAppId(in payload: [UInt8]) -> String? {
        guard Self.find(Self.statusType, in: payload) != nil, let start = Self.find(Self.appIdKey, in: payload) else { return nil }
        guard let end = payload[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: payload[start..<end], as: UTF8.self)
    }

    private static let statusType = Array(#""type":"status""#.utf8)
    private static let appIdKey = Array(#""appId":""#.utf8)

    /// The index just past the first occurrence of `needle` in `bytes`.
    private static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        var index = 0
        while index + needle.count <= bytes.count {
            if bytes[index] == needle[0], bytes[index..<index + needle.count].elementsEqual(needle) { return index + needle.count }
            index += 1
        }
        return nil
    }
}

extension StatusRepository.Change {
    /// The name of a change on the bus.
    var wireName: String? {
        switch self {
        case .none: nil
        case .status: "status"
        case .devices: "devices"
        }
    }

    init?(wireName: String) {
        switch wireName {
        case "status": self = .status
        case "devices": self = .devices
        default: return nil
        }
    }
}
