/// SPEC §3 `loginPolicy`: which of a user's other devices a login kicks (Tencent's multi-device login settings).
public enum LoginPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Any devices, up to `maxDevicesPerUser`.
    case multi
    /// A login kicks the user's other devices of the same platform (Android kicks Android, web kicks web).
    case singlePerPlatform
    /// A login kicks every other device of the user.
    case single

    /// The platforms whose other devices a login from `platform` kicks, before `maxDevicesPerUser` is applied to the
    /// devices that remain. The connect script applies this set in the same atomic step as the login, so the policy
    /// itself is decided here, once, and the script only filters the user's devices by it.
    public func platformsKicked(byLoginFrom platform: Platform) -> Set<Platform> {
        switch self {
        case .multi: []
        case .singlePerPlatform: [platform]
        case .single: Set(Platform.allCases)
        }
    }
}
