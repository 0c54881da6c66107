/// A user's presence state (SPEC §2).
public enum StatusType: String, Sendable, Hashable, Codable {
    /// At least one device connected.
    case online
    /// The last device went away without logging out.
    case offline
    /// Never logged in, or the last device logged out or was kicked.
    case unlogined
}

/// A connected device as listed in `onlineDevices`.
public struct OnlineDevice: Sendable, Hashable, Codable {
    public var deviceId: String
    public var platform: Platform
    /// What the device reported of its user's attention (SPEC §10.4); a device starts `active`.
    public var state: DeviceState

    /// Creates a device entry.
    public init(deviceId: String, platform: Platform, state: DeviceState = .active) {
        self.deviceId = deviceId
        self.platform = platform
        self.state = state
    }

    enum CodingKeys: String, CodingKey {
        case deviceId
        case platform
        case state
    }

    /// Decodes an entry; one without `state` (written before device states existed) is `active`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.deviceId = try container.decode(String.self, forKey: .deviceId)
        self.platform = try container.decode(Platform.self, forKey: .platform)
        self.state = try container.decodeIfPresent(DeviceState.self, forKey: .state) ?? .active
    }
}

/// The status object of SPEC §2.
public struct UserStatus: Sendable, Hashable, Codable {
    public var userId: String
    public var statusType: StatusType
    public var customStatus: String?
    public var lastActiveAt: Int64?
    public var version: Int64
    public var onlineDevices: [OnlineDevice]?
    /// The availability shown (SPEC §10.1): whenever the viewer sees the user online, always in the own view.
    public var availability: Availability?
    /// When the custom status clears itself, epoch ms (SPEC §10.2).
    public var customStatusExpiresAt: Int64?

    /// Creates a status object.
    public init(
        userId: String,
        statusType: StatusType,
        customStatus: String? = nil,
        lastActiveAt: Int64? = nil,
        version: Int64 = 0,
        onlineDevices: [OnlineDevice]? = [],
        availability: Availability? = nil,
        customStatusExpiresAt: Int64? = nil
    ) {
        self.userId = userId
        self.statusType = statusType
        self.customStatus = customStatus
        self.lastActiveAt = lastActiveAt
        self.version = version
        self.onlineDevices = onlineDevices
        self.availability = availability
        self.customStatusExpiresAt = customStatusExpiresAt
    }

    /// The same status without the device list (the backend query without `detail`).
    public func withoutDevices() -> UserStatus {
        var copy = self
        copy.onlineDevices = nil
        return copy
    }
}

/// A per-id failure in a batch result.
public struct UserFailure: Sendable, Hashable, Codable {
    public var userId: String
    public var code: StatusError.Code

    /// Creates a failure entry.
    public init(userId: String, code: StatusError.Code) {
        self.userId = userId
        self.code = code
    }
}
