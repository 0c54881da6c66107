/// Which other users a connected device hears about besides its subscriptions (SPEC §6, §7 `presence`).
public enum PresenceScope: Sendable, Hashable {
    /// Only users the device's user subscribed to (the default).
    case subscriptions
    /// The user's friends, plus subscriptions.
    case friends
    /// Every user of the app.
    case all
    /// Users having one of these roles, plus subscriptions.
    case roles(Set<String>)

    /// Parses `subscriptions`, `friends`, `all` or `roles:r1,r2`; anything else is `INVALID_REQUEST`.
    public static func parse(_ value: String?) throws(StatusError) -> PresenceScope {
        guard let value else { return .subscriptions }
        switch value {
        case "subscriptions": return .subscriptions
        case "friends": return .friends
        case "all": return .all
        default:
            let prefix = "roles:"
            guard value.hasPrefix(prefix) else { throw invalid() }
            let roles = value.dropFirst(prefix.count).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard !roles.isEmpty, roles.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 64 }) else { throw invalid() }
            return .roles(Set(roles))
        }
    }

    private static func invalid() -> StatusError {
        StatusError(.invalidRequest, "presence must be subscriptions, friends, all or roles:<r1>,<r2>")
    }
}
