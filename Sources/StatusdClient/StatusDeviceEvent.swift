/// What a ``StatusDevice`` hears, in order, as the elements of ``StatusDevice/events``.
public enum StatusDeviceEvent: Sendable {
    /// The server accepted the connection (first connect or a reconnect).
    case welcome(StatusDeviceWelcome)
    /// `onUserStatusChanged`, without the statuses older than one already seen for the same user. `snapshot` is true
    /// for the frame a connect with `snapshot=true` receives (SPEC §10.6), `truncated` when the server capped it.
    case statusChanged([UserStatus], snapshot: Bool, truncated: Bool)
    /// The server closed this device with a `kicked` event (another login, a backend kick, too many devices). The
    /// device does not reconnect after it, so that two devices never take each other's place in a loop.
    case kicked(reason: String)
    /// The connection is down (refused, lost, or closed by the server) and the device tries again after `delay`.
    case reconnecting(attempt: Int, delay: Duration, cause: String)
}

/// The `welcome` frame (SPEC §7).
public struct StatusDeviceWelcome: Sendable, Decodable {
    public var userId: String
    public var deviceId: String
    /// The interval the device heartbeats at, below the app's `heartbeatTimeoutSeconds`.
    public var heartbeatSeconds: Int
    /// The user's own status.
    public var status: UserStatus
    /// The token a reconnect presents to be sent what it missed.
    public var resume: String?
}
