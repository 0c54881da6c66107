/// What a connected device reports of its user's attention (SPEC §10.4): the input of automatic away (SPEC §10.1), and
/// what a backend reads to choose between an in-app notification and a push.
public enum DeviceState: String, Sendable, Hashable, Codable, CaseIterable {
    /// In use: the app is in front and its user is there. A device starts so.
    case active
    /// Open, but without input for a while.
    case idle
    /// Not in front: a hidden page, an app in the background.
    case background

    /// The value a request names; an unknown one is `INVALID_REQUEST`.
    public static func parse(_ value: String) throws(StatusError) -> DeviceState {
        guard let state = DeviceState(rawValue: value) else {
            throw StatusError(.invalidRequest, "state must be one of active, idle, background")
        }
        return state
    }

    /// Whether the device's user is away from it, for automatic away.
    public var isAway: Bool { self != .active }
}
