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

    /// Whether the scope reaches beyond the user's own relationships (`all`, `roles:`): such a session hears changes of
    /// users it cannot name in advance.
    public var isAppWide: Bool {
        switch self {
        case .all, .roles: true
        case .subscriptions, .friends: false
        }
    }

    /// The most roles one `roles:` scope may name (SPEC §1).
    public static let maxRoles = 32
    /// The longest role a `roles:` scope may name, in chars (SPEC §1).
    public static let maxRoleLength = 64

    /// Parses `subscriptions`, `friends`, `all` or `roles:r1,r2` (SPEC §1: 1–32 roles of 1–64 chars `A-Z a-z 0-9 _ - .`);
    /// anything else is `INVALID_REQUEST`.
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
            guard (1...maxRoles).contains(roles.count), roles.allSatisfy(isValidRole) else { throw invalid() }
            return .roles(Set(roles))
        }
    }

    /// A role of a `roles:` scope: 1–64 chars of `A-Z a-z 0-9 _ - .`.
    public static func isValidRole(_ role: String) -> Bool {
        let bytes = role.utf8
        guard (1...maxRoleLength).contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
                true
            default:
                false
            }
        }
    }

    private static func invalid() -> StatusError {
        StatusError(.invalidRequest, "presence must be subscriptions, friends, all or roles:<r1>,<r2> (1-32 roles of 1-64 chars A-Z a-z 0-9 _ - .)")
    }
}
