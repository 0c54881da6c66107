import StatusCore

/// SPEC §6 as a pure rule for one (watching session, watched user) pair: whether the session hears about the user's
/// changes. ``FanoutIndex`` applies the same rules through its per-target tables on the delivery path; this form
/// serves where one session's rights are asked about a list of users (a resuming device, SPEC §7).
enum Entitlement {
    /// What relates the watching session's user to one watched user.
    struct Facts: Sendable, Equatable {
        var userId: String
        /// The watched user is the session's own user.
        var isSelf: Bool
        /// The session's user subscribes to them.
        var subscribes: Bool
        /// They are friends.
        var isFriend: Bool
        /// Either blocked the other.
        var blocked: Bool
    }

    /// The users a session of `userId` hears about through `relations` or as its own, and `others` (users it may hear
    /// about through its presence scope), each once, as ``FanoutIndex/watched(by:including:)`` lists them from the
    /// index: here from relationships read from Redis (a resume, which must not miss one made just before it).
    static func facts(of userId: String, relations: Relations, including others: [String] = []) -> [Facts] {
        facts(of: userId, subscriptions: relations.subscriptions, friends: relations.friends, blocked: relations.blocked, including: others)
    }

    /// The same from the three sets, wherever they were read (``FanoutIndex/watched(by:including:)`` reads the index's).
    static func facts(
        of userId: String,
        subscriptions: Set<String>,
        friends: Set<String>,
        blocked: Set<String>,
        including others: [String] = []
    ) -> [Facts] {
        var facts = [Facts(userId: userId, isSelf: true, subscribes: false, isFriend: false, blocked: false)]
        var listed: Set<String> = [userId]
        for other in subscriptions.sorted() + friends.sorted() + others where listed.insert(other).inserted {
            facts.append(
                Facts(
                    userId: other,
                    isSelf: false,
                    subscribes: subscriptions.contains(other),
                    isFriend: friends.contains(other),
                    blocked: blocked.contains(other)
                )
            )
        }
        return facts
    }

    /// Whether a session with presence `scope` hears about the user of `facts` (whose profile role is `role`) under
    /// `config`.
    static func hears(_ facts: Facts, role: String?, scope: PresenceScope, config: AppConfig) -> Bool {
        if facts.isSelf { return config.multiDeviceSync }
        guard config.plan == .premium, !facts.blocked else { return false }
        if config.friendStatusNotify && facts.isFriend { return true }
        guard config.statusQuery else { return false }
        if facts.subscribes { return true }
        switch scope {
        case .subscriptions: return false
        case .friends: return facts.isFriend
        case .all: return true
        case .roles(let roles): return role.map(roles.contains) ?? false
        }
    }
}
