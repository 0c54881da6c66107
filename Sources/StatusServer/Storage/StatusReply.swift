import RedisClient
import StatusCore

/// Decodes the flat status reply of the scripts' `status_reply` (`lib.lua`): `t, cs, la, v, role, device, platform, ...`.
struct StatusReply: Sendable {
    /// The user's status object.
    var status: UserStatus
    /// The user's role, for role-scoped presence.
    var role: String?

    /// Decodes `values` starting at `offset`.
    init(userId: String, values: [RedisValue], offset: Int) throws {
        guard values.count >= offset + 5 else { throw StatusReplyError.malformed }
        let type = StatusType(rawValue: values[offset].string ?? "") ?? .unlogined
        let custom = values[offset + 1].string.flatMap { $0.isEmpty ? nil : $0 }
        let lastActive = values[offset + 2].int
        let version = values[offset + 3].int ?? 0
        let role = values[offset + 4].string.flatMap { $0.isEmpty ? nil : $0 }
        var devices: [OnlineDevice] = []
        var index = offset + 5
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
    }
}

/// A script reply that does not have the expected shape.
enum StatusReplyError: Error {
    case malformed
}
