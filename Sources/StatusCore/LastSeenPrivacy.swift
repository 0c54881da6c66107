/// Who else may see a user's `lastActiveAt` (SPEC §2 last-seen privacy; a profile field and an app default).
public enum LastSeenPrivacy: String, Sendable, Hashable, Codable, CaseIterable {
    case everyone
    case friends
    case nobody
}
