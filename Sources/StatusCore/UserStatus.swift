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

    /// Creates a device entry.
    public init(deviceId: String, platform: Platform) {
        self.deviceId = deviceId
        self.platform = platform
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
