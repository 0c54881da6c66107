import StatusCore

/// The SPEC §8 callback body: a device-level transition (`login`, `logout`, `disconnect`, with the device's id and
/// platform), a change of the user's custom status (`customStatusChange`, with `customStatus` and no device fields) or
/// of their availability (`availabilityChange`, with `availability`, SPEC §10.1).
struct WebhookEvent: Sendable, Hashable, Encodable {
    /// A device a login kicked, as listed in the login's `kickedDevices`.
    struct KickedDevice: Sendable, Hashable, Encodable {
        var deviceId: String
        var platform: String
    }

    /// What happened.
    enum Action: Sendable, Hashable {
        /// A device logged in, out, or went away; `kickedDevices` only on a login that kicked other devices.
        case device(deviceId: String, platform: String, action: String, reason: String, kickedDevices: [KickedDevice])
        /// The custom status was set, changed or cleared by setSelfStatus (`setCustomStatus`), or cleared because the
        /// user left `online` (`cleared`); `customStatus` is the new value, null when none.
        case customStatus(customStatus: String?, reason: String)
        /// The availability the user chose changed (SPEC §10.1, §8): the own view, so also `invisible`.
        case availability(Availability)
    }

    var appId: String
    var userId: String
    var action: Action
    /// The user's status after the transition.
    var statusType: StatusType
    var eventTime: Int64

    enum CodingKeys: String, CodingKey {
        case event, appId, userId, deviceId, platform, action, reason, statusType, eventTime, kickedDevices, customStatus, availability
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("stateChange", forKey: .event)
        try container.encode(appId, forKey: .appId)
        try container.encode(userId, forKey: .userId)
        switch action {
        case .device(let deviceId, let platform, let action, let reason, let kickedDevices):
            try container.encode(deviceId, forKey: .deviceId)
            try container.encode(platform, forKey: .platform)
            try container.encode(action, forKey: .action)
            try container.encode(reason, forKey: .reason)
            if !kickedDevices.isEmpty { try container.encode(kickedDevices, forKey: .kickedDevices) }
        case .customStatus(let customStatus, let reason):
            try container.encode("customStatusChange", forKey: .action)
            try container.encode(reason, forKey: .reason)
            // Always present: null says the user has none now.
            try container.encode(customStatus, forKey: .customStatus)
        case .availability(let availability):
            try container.encode("availabilityChange", forKey: .action)
            try container.encode(availability, forKey: .availability)
        }
        try container.encode(statusType, forKey: .statusType)
        try container.encode(eventTime, forKey: .eventTime)
    }
}
