import RedisClient
import StatusCore

/// Decodes the flat status reply of the scripts' `status_reply` (`lib.lua`):
/// `t, cs, la, v, role, lastSeenPrivacy, device, platform, ...`.
struct StatusReply: Sendable {
    /// The user's status object.
    var status: UserStatus
    /// The user's role, for role-scoped presence.
    var role: String?
    /// The user's own last-seen privacy (nil: the app default applies).
    var lastSeenPrivacy: LastSeenPrivacy?

    /// The values before the device pairs.
    static let fixedCount = 6

    /// Decodes `values` starting at `offset`.
    init(userId: String, values: [RedisValue], offset: Int) throws {
        guard values.count >= offset + Self.fixedCount else { throw StatusReplyError.malformed }
        let type = StatusType(rawValue: values[offset].string ?? "") ?? .unlogined
        let custom = values[offset + 1].string.flatMap { $0.isEmpty ? nil : $0 }
        let lastActive = values[offset + 2].int
        let version = values[offset + 3].int ?? 0
        let role = values[offset + 4].string.flatMap { $0.isEmpty ? nil : $0 }
        let privacy = values[offset + 5].string.flatMap(LastSeenPrivacy.init(rawValue:))
        var devices: [OnlineDevice] = []
        var index = offset + Self.fixedCount
        while index + 1 < values.count {
            if let id = values[index].string, let platform = Platform(rawValue: values[index + 1].string ?? "") {
                devices.append(OnlineDevice(deviceId: id, platform: platform))
            }
            index += 2
        }
        devices.sort { $0.deviceId < $1.deviceId }
        self.status = UserStatus(
            userId: userId,
            statusType: type,
            customStatus: custom,
            lastActiveAt: lastActive,
            version: version,
            onlineDevices: devices
        )
        self.role = role
        self.lastSeenPrivacy = privacy
    }
}

/// A status read from Redis with what decides who may see what of it.
struct StoredStatus: Sendable {
    var status: UserStatus
    /// The user's profile role.
    var role: String?
    /// The user's own last-seen privacy (nil: the app default applies).
    var lastSeenPrivacy: LastSeenPrivacy?
    /// When the version last moved, epoch ms (nil for statuses last changed before this was recorded).
    var versionTime: Int64?
    /// Whether the viewer the read was made for is the user's friend (nil when read for no viewer).
    var viewerIsFriend: Bool?

    /// The status as `viewer` may see it under `appDefault` (SPEC §2 last-seen privacy).
    func viewed(by viewer: LastSeenPrivacy.Viewer, appDefault: LastSeenPrivacy) -> UserStatus {
        status.viewed(by: viewer, privacy: lastSeenPrivacy ?? appDefault)
    }
}

/// A script reply that does not have the expected shape.
enum StatusReplyError: Error {
    case malformed
}
