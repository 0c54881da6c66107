import RedisClient
import StatusCore

/// Decodes the flat status reply of the scripts' `status_reply` (`lib.lua`):
/// `t, cs, la, v, role, lastSeenPrivacy, av, pv, ht, hl, ce, ai, device, platform[:state], ...`.
struct StatusReply: Sendable {
    /// Everything every view of the user's status is made of (SPEC §10.5); its `status` is the own view.
    var record: PresenceRecord
    /// The user's role, for role-scoped presence.
    var role: String?

    /// The user's status as it is (the own view).
    var status: UserStatus { record.status }
    /// The user's own last-seen privacy (nil: the app default applies).
    var lastSeenPrivacy: LastSeenPrivacy? { record.lastSeenPrivacy }

    /// The values before the device pairs.
    static let fixedCount = 12

    /// Decodes `values`, a status reply to its end. The reply does not name its user: the status's `userId` is empty
    /// until ``owned(by:)`` sets it.
    init(_ values: ArraySlice<RedisValue>) throws {
        guard values.count >= Self.fixedCount else {
            throw StatusReplyError(script: "lib.lua status_reply", problem: "\(values.count) values, at least \(Self.fixedCount) expected")
        }
        let offset = values.startIndex
        func text(_ index: Int) -> String? { values[offset + index].string.flatMap { $0.isEmpty ? nil : $0 } }
        let type = StatusType(rawValue: values[offset].string ?? "") ?? .unlogined
        let version = values[offset + 3].int ?? 0
        var devices: [OnlineDevice] = []
        var index = offset + Self.fixedCount
        while index + 1 < values.endIndex {
            if let id = values[index].string, let device = StatusFields.device(id, word: values[index + 1].string ?? "") {
                devices.append(device)
            }
            index += 2
        }
        devices.sort { $0.deviceId < $1.deviceId }
        self.record = StatusFields(
            type: type,
            custom: text(1),
            lastActive: values[offset + 2].int,
            version: version,
            privacy: text(5),
            availability: text(6),
            publicVersion: values[offset + 7].int,
            hiddenType: text(8),
            hiddenLastActive: values[offset + 9].int,
            expiresAt: values[offset + 10].int,
            autoAway: values[offset + 11].string == "1"
        ).record(userId: "", devices: devices)
        self.role = text(4)
    }

    /// The reply as the status of `userId`, the user whose keys the script was run on.
    func owned(by userId: String) -> StatusReply {
        var reply = self
        reply.record.status.userId = userId
        return reply
    }
}

/// The stored fields of a status, decoded alike from a script's reply and from a read of the hash.
struct StatusFields {
    var type: StatusType
    var custom: String?
    var lastActive: Int64?
    var version: Int64
    var privacy: String?
    var availability: String?
    var publicVersion: Int64?
    var hiddenType: String?
    var hiddenLastActive: Int64?
    var expiresAt: Int64?
    /// `ai`: automatic away holds (SPEC §10.1).
    var autoAway: Bool = false

    /// The entry of a device from its id and its word in the read copy or a status reply: the platform, then
    /// `:idle` or `:background` when it is not active (`lib.lua` `device_word`). Nil for a platform or state this
    /// version does not know.
    static func device(_ deviceId: String, word: Substring) -> OnlineDevice? {
        guard let colon = word.firstIndex(of: ":") else {
            return Platform(rawValue: String(word)).map { OnlineDevice(deviceId: deviceId, platform: $0) }
        }
        guard let platform = Platform(rawValue: String(word[..<colon])),
            let state = DeviceState(rawValue: String(word[word.index(after: colon)...]))
        else { return nil }
        return OnlineDevice(deviceId: deviceId, platform: platform, state: state)
    }

    static func device(_ deviceId: String, word: String) -> OnlineDevice? { device(deviceId, word: word[...]) }

    /// What the public sees of an invisible user from `ht` and `hl` (`lib.lua`): `offline` or `unlogined` as stored, or,
    /// until the grace of their becoming invisible ends, `online:<availability>:<customStatusExpiresAt>:<custom status>`
    /// (SPEC §10.5: seen as they were when they became invisible).
    static func hidden(_ stored: String?, lastActiveAt: Int64?) -> PresenceRecord.Hidden {
        guard let stored, stored.hasPrefix("online:") else {
            let frozen = stored.flatMap(StatusType.init(rawValue:)) ?? .offline
            return PresenceRecord.Hidden(statusType: frozen == .online ? .offline : frozen, lastActiveAt: lastActiveAt)
        }
        let parts = stored.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4 else { return PresenceRecord.Hidden(statusType: .offline, lastActiveAt: lastActiveAt) }
        return PresenceRecord.Hidden(
            statusType: .online,
            lastActiveAt: lastActiveAt,
            customStatus: parts[3].isEmpty ? nil : String(parts[3]),
            availability: Availability(rawValue: String(parts[1])) ?? .available,
            customStatusExpiresAt: Int64(parts[2])
        )
    }

    func record(userId: String, devices: [OnlineDevice]?) -> PresenceRecord {
        // A value this version does not know counts as none (available).
        let chosen = availability.flatMap(Availability.init(rawValue:)) ?? .available
        let status = UserStatus(
            userId: userId,
            statusType: type,
            customStatus: custom,
            lastActiveAt: lastActive,
            version: version,
            onlineDevices: devices,
            availability: chosen,
            customStatusExpiresAt: custom == nil ? nil : expiresAt
        )
        var hidden: PresenceRecord.Hidden?
        if chosen == .invisible {
            hidden = Self.hidden(hiddenType, lastActiveAt: hiddenLastActive)
        }
        return PresenceRecord(
            status: status,
            availability: chosen,
            publicVersion: publicVersion,
            hidden: hidden,
            lastSeenPrivacy: privacy.flatMap(LastSeenPrivacy.init(rawValue:)),
            allDevicesIdle: autoAway
        )
    }
}

/// A status read from Redis with what decides who may see what of it.
struct StoredStatus: Sendable {
    /// Everything the views of the status are made of (SPEC §10.5).
    var record: PresenceRecord
    /// The user's profile role.
    var role: String?
    /// When the version last moved, epoch ms (nil for statuses last changed before this was recorded).
    var versionTime: Int64?
    /// When the public version last moved, epoch ms (nil: never since public versions exist; ``versionTime`` applies).
    var publicVersionTime: Int64?
    /// Whether the viewer the read was made for is the user's friend (nil when read for no viewer).
    var viewerIsFriend: Bool?
    /// The user's public version frozen for the viewer the read was made for, while a block between them lasts (SPEC
    /// §10.5, `block_side.lua`); nil when there is none, or the read was made for no viewer.
    var frozenForViewer: Int64? = nil

    /// The user's status as it is (the own view).
    var status: UserStatus { record.status }
    /// The user's own last-seen privacy (nil: the app default applies).
    var lastSeenPrivacy: LastSeenPrivacy? { record.lastSeenPrivacy }

    /// When the public version last moved: `pt`, or, for a status whose public version never moved apart from its
    /// version since public versions exist, when the version did.
    var publicTime: Int64? {
        publicVersionTime ?? (record.publicVersion == status.version ? versionTime : nil)
    }

    /// The status as `view` shows it under `appDefault` (SPEC §10.5, §2 last-seen privacy).
    func viewed(as view: PresenceView, appDefault: LastSeenPrivacy) -> UserStatus {
        view.status(of: record, appDefault: appDefault)
    }
}

/// A reply from Redis that does not have the shape its script (or command) promises: which, and what was wrong.
struct StatusReplyError: Error, Equatable, CustomStringConvertible {
    /// The script or command whose reply it was.
    var script: String
    /// What did not fit.
    var problem: String

    /// A reply of the wrong shape, where no more can be said.
    static let malformed = StatusReplyError(script: "reply", problem: "malformed")

    var description: String { "malformed reply of \(script): \(problem)" }
}
