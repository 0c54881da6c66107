import StatusCore

/// A message on the cluster bus (Redis pub/sub channel ``BusMessage/channel``) that every node listens to.
///
/// Durable state lives in Redis; the bus only tells nodes what changed so they can update their in-memory
/// fan-out index and deliver events to their own sessions.
enum BusMessage: Sendable, Hashable, Codable {
    /// A user's status changed (`status`), or only their device list did (`devices`).
    case statusChanged(StatusChange)
    /// A user's relationships changed (subscriptions, friends, blocks): nodes holding their sessions reload them.
    case relationsChanged(appId: String, userIds: [String])
    /// Devices were removed by logout, kick or sweep: the nodes holding them close them with `reason`.
    case devicesClosed(appId: String, userId: String, devices: [ClosedDevice], reason: String)
    /// An app's config changed: nodes drop their cached copy at once.
    case configChanged(appId: String)
    /// A user or a whole app was deleted: sessions go.
    case deleted(appId: String, userId: String?)

    /// The channel every node subscribes to.
    static let channel = "st:bus"
}

/// One status change as published.
struct StatusChange: Sendable, Hashable, Codable {
    var appId: String
    var change: Int
    /// The changed user's role, for `roles:` presence scopes.
    var role: String?
    var status: UserStatus
}

/// A device whose connection is to be closed.
struct ClosedDevice: Sendable, Hashable, Codable {
    var deviceId: String
    var connection: String
}
