/// Who else may see a user's `lastActiveAt` (SPEC §2 last-seen privacy; a profile field and an app default).
public enum LastSeenPrivacy: String, Sendable, Hashable, Codable, CaseIterable {
    case everyone
    case friends
    case nobody

    /// Who is looking at a user's status, as far as last-seen privacy is concerned.
    public enum Viewer: Sendable, Hashable {
        /// The user themself, the app's backend (the backend query, listings with the app key): always sees it.
        case privileged
        /// Another user; `isFriend` when the two are friends.
        case other(isFriend: Bool)
    }

    /// Whether `viewer` may see `lastActiveAt` of a user whose (effective) setting is this one.
    public func shows(to viewer: Viewer) -> Bool {
        switch (self, viewer) {
        case (_, .privileged), (.everyone, _): true
        case (.friends, .other(let isFriend)): isFriend
        case (.nobody, .other): false
        }
    }
}

extension UserStatus {
    /// The status as `viewer` may see it: without `lastActiveAt` where `privacy` hides it from them.
    public func viewed(by viewer: LastSeenPrivacy.Viewer, privacy: LastSeenPrivacy) -> UserStatus {
        guard lastActiveAt != nil, !privacy.shows(to: viewer) else { return self }
        var copy = self
        copy.lastActiveAt = nil
        return copy
    }
}
