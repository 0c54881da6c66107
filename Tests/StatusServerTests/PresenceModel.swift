/// SPEC §2, §4, §6 and §10 as a pure model: operations in, the views every observer must be shown out.
///
/// Where the order of what happened is not determined (two setSelfStatus calls of one user sent at once, a grace and a
/// custom status expiry of one user falling due in the same sweep), the model keeps every state a linearization of what
/// happened allows (``worlds``); each observation of the server keeps those it agrees with (``keep(_:where:)``), and
/// an observation none agrees with is a failure. So the checks stay exact: nothing is accepted that no order of the
/// operations could produce.
struct PresenceModel {
    enum StatusType: String, Hashable, Sendable { case online, offline, unlogined }

    /// What the model follows where the service is known to differ from SPEC today.
    struct Options: Hashable, Sendable {
        /// The app's `offlineGraceSeconds` is above 0 (SPEC §10.3).
        var graced = true
        /// With a grace, becoming invisible while online shows as a drop (SPEC §10.5): others still see the user online
        /// until the grace passes, and nothing if they leave invisibility before. Off: others see `offline` at once (the
        /// reading for G = 0).
        var invisibleGrace = false
    }

    /// What one user is, as stored.
    struct User: Hashable, Sendable {
        /// Connected devices: deviceId → whether it reports `idle` or `background`.
        var devices: [String: Bool] = [:]
        /// The last device dropped and the grace has not passed yet (SPEC §10.3).
        var inGrace = false
        /// The statusType while no device is connected and no grace runs.
        var resting: StatusType = .unlogined
        var customStatus: String?
        /// The custom status carries `customStatusExpiresAt`.
        var expires = false
        /// The chosen availability.
        var availability = "available"
        /// Automatic away (every device idle), kept as it was through a grace.
        var autoAway = false
        var version: Int64 = 0
        var publicVersion: Int64 = 0
        /// While invisible: the statusType others see, frozen when they stopped being seen online.
        var hidden: StatusType?
        /// ``Options/invisibleGrace``: while the grace of going invisible runs, what others still see.
        var shownBeforeHiding: Shown?
        /// The custom status others still see during that grace is the one stored (none set since): its expiry clears
        /// it from what they see too (SPEC §10.5, as for a user whose last device dropped).
        var frozenCustomIsStored = false

        var statusType: StatusType { !devices.isEmpty || inGrace ? .online : resting }

        var shownAvailability: String {
            availability == "available" && autoAway && statusType == .online ? "away" : availability
        }

        /// Everything the own view's version moves with (SPEC §2, §10.1, §10.2).
        var ownKey: [String?] { [statusType.rawValue, customStatus, availability, shownAvailability, expires ? "expires" : nil] }

        /// The public view without its version (SPEC §10.5).
        var publicShown: Shown {
            if let shownBeforeHiding { return shownBeforeHiding }
            if let hidden { return Shown(statusType: hidden, customStatus: nil, availability: nil, expires: false) }
            return Shown(
                statusType: statusType,
                customStatus: customStatus,
                availability: statusType == .online ? shownAvailability : nil,
                expires: expires && customStatus != nil
            )
        }
    }

    /// A view without its version.
    struct Shown: Hashable, Sendable {
        var statusType: StatusType
        var customStatus: String?
        var availability: String?
        var expires: Bool
    }

    /// What a viewer is shown of a user: the fields the run compares.
    struct View: Hashable, Sendable, CustomStringConvertible {
        var statusType: StatusType
        var customStatus: String?
        var availability: String?
        var version: Int64
        var expires: Bool
        /// The block mask (SPEC §4): no `lastActiveAt`.
        var masked = false

        var description: String {
            var parts = ["\(statusType.rawValue)", "v\(version)"]
            if let customStatus { parts.append("\"\(customStatus)\"") }
            if let availability { parts.append(availability) }
            if expires { parts.append("expiring") }
            if masked { parts.append("masked") }
            return parts.joined(separator: " ")
        }
    }

    /// One state the service may be in.
    struct World: Hashable, Sendable {
        var users: [String: User]
        /// [subscriber, target].
        var subscriptions: Set<[String]> = []
        var friendships: Set<Set<String>> = []
        /// [blocker, blocked].
        var blocks: Set<[String]> = []
        /// [viewer, target] → the target's public version when the block between them began.
        var blockVersions: [[String]: Int64] = [:]

        func isBlocked(_ a: String, _ b: String) -> Bool { blocks.contains([a, b]) || blocks.contains([b, a]) }
        func isFriend(_ a: String, _ b: String) -> Bool { friendships.contains([a, b]) }

        /// What `viewer` is shown of `target` (SPEC §10.5); a nil viewer is the app itself (the own view).
        func view(of target: String, by viewer: String?) -> View {
            let user = users[target] ?? User()
            guard let viewer, viewer != target else {
                return View(
                    statusType: user.statusType,
                    customStatus: user.customStatus,
                    availability: user.shownAvailability,
                    version: user.version,
                    expires: user.expires && user.customStatus != nil
                )
            }
            if isBlocked(viewer, target) {
                let version = blockVersions[[viewer, target]] ?? user.publicVersion
                return View(statusType: .offline, version: version, expires: false, masked: true)
            }
            let shown = user.publicShown
            return View(
                statusType: shown.statusType,
                customStatus: shown.customStatus,
                availability: shown.availability,
                version: user.publicVersion,
                expires: shown.expires
            )
        }

        /// The version `viewer` is shown of `target` in whatever view applies.
        func version(of target: String, by viewer: String?) -> Int64 { view(of: target, by: viewer).version }

        /// SPEC §6 (premium, statusQuery, friendStatusNotify, multiDeviceSync): whether a device of `viewer` with presence
        /// `scope` hears about `target`.
        func hears(_ viewer: String, _ target: String, scope: Scope) -> Bool {
            if viewer == target { return true }
            if isBlocked(viewer, target) { return false }
            return subscriptions.contains([viewer, target]) || isFriend(viewer, target) || scope.takes(target)
        }

        /// SPEC §10.6: the snapshot a device of `viewer` with presence `scope` is sent, by userId.
        func snapshot(for viewer: String, scope: Scope) -> [String: View] {
            var result: [String: View] = [:]
            for target in users.keys where target != viewer {
                let related = subscriptions.contains([viewer, target]) || isFriend(viewer, target)
                let view = view(of: target, by: viewer)
                if related || (scope.takes(target) && (isBlocked(viewer, target) || view.statusType == .online)) { result[target] = view }
            }
            return result
        }

        /// Whether anything is pending that time alone ends: a grace, an expiry, a grace of going invisible.
        var hasPending: Bool { users.values.contains { $0.inGrace || ($0.expires && $0.customStatus != nil) || $0.shownBeforeHiding != nil } }
    }

    enum Scope: String, Hashable, Sendable {
        case subscriptions, friends, all
        /// `roles:member`: the users whose profile has the role ``PresenceModel/members``.
        case members = "roles:member"

        /// Whether the scope itself (besides the relationships) takes `target` (SPEC §6 rule 4).
        func takes(_ target: String) -> Bool {
            switch self {
            case .all: true
            case .members: PresenceModel.members.contains(target)
            case .subscriptions, .friends: false
            }
        }
    }

    /// The users created with the role `member` (again after a deletion), heard by a `roles:member` scope.
    static let members: Set<String> = ["u0", "u2"]

    /// One operation as the service applies it, atomically.
    enum Operation: Hashable, Sendable, CustomStringConvertible {
        case connect(String, device: String)
        case drop(String, device: String)
        /// A kick of one device, or of all of them (nil).
        case kick(String, device: String?)
        /// A device logs out on its socket (SPEC §7 `logout`): as a kick of that device, within a grace of going invisible
        /// too (it ends the grace at once).
        case logout(String, device: String)
        case delete(String)
        case setCustomStatus(String, String?, expiring: Bool)
        case setAvailability(String, String)
        case setDeviceState(String, device: String, idle: Bool)
        case subscribe(String, String)
        case unsubscribe(String, String)
        case friend(String, String)
        case unfriend(String, String)
        case block(String, String)
        case unblock(String, String)
        /// Time passed: the user's grace ends (SPEC §10.3).
        case endGrace(String)
        /// Time passed: the user's custom status expires (SPEC §10.2).
        case expire(String)
        /// Time passed: the grace of going invisible ends (``Options/invisibleGrace``).
        case endHiding(String)

        var description: String {
            switch self {
            case .connect(let u, let d): "connect \(u)/\(d)"
            case .drop(let u, let d): "drop \(u)/\(d)"
            case .kick(let u, let d): "kick \(u)/\(d ?? "*")"
            case .logout(let u, let d): "logout \(u)/\(d)"
            case .delete(let u): "delete \(u)"
            case .setCustomStatus(let u, let s, let e): "set \(u) \(s ?? "nil")\(e ? " (1 s)" : "")"
            case .setAvailability(let u, let a): "availability \(u) \(a)"
            case .setDeviceState(let u, let d, let idle): "state \(u)/\(d) \(idle ? "idle" : "active")"
            case .subscribe(let u, let t): "subscribe \(u)→\(t)"
            case .unsubscribe(let u, let t): "unsubscribe \(u)→\(t)"
            case .friend(let u, let t): "friend \(u) \(t)"
            case .unfriend(let u, let t): "unfriend \(u) \(t)"
            case .block(let u, let t): "block \(u) \(t)"
            case .unblock(let u, let t): "unblock \(u) \(t)"
            case .endGrace(let u): "grace ends \(u)"
            case .expire(let u): "expiry \(u)"
            case .endHiding(let u): "hiding ends \(u)"
            }
        }
    }

    let options: Options
    /// Every state a linearization of the operations so far allows, as far as the observations tell.
    private(set) var worlds: [World]

    init(users: [String], options: Options = Options()) {
        self.options = options
        worlds = [World(users: Dictionary(uniqueKeysWithValues: users.map { ($0, User()) }))]
    }

    /// The states, when one is left; else the first (which callers use only for what all agree on).
    var world: World { worlds[0] }

    mutating func apply(_ operation: Operation) {
        worlds = Self.unique(worlds.map { Self.applying(operation, to: $0, options: options) })
    }

    /// Operations that ran at the same time: every order.
    mutating func applyConcurrently(_ operations: [Operation]) {
        worlds = Self.unique(
            worlds.flatMap { world in
                Self.orders(of: operations).map { order in order.reduce(world) { Self.applying($1, to: $0, options: options) } }
            }
        )
    }

    /// Time passed until everything pending ended: each user's pending ends in every order (they run in one sweep).
    mutating func passTime() {
        worlds = Self.unique(
            worlds.flatMap { world in
                var results = [world]
                for (userId, user) in world.users.sorted(by: { $0.key < $1.key }) {
                    var due: [Operation] = []
                    if user.inGrace { due.append(.endGrace(userId)) }
                    if user.expires && user.customStatus != nil { due.append(.expire(userId)) }
                    if user.shownBeforeHiding != nil { due.append(.endHiding(userId)) }
                    guard !due.isEmpty else { continue }
                    results = Self.unique(
                        results.flatMap { partial in
                            Self.orders(of: due).map { order in order.reduce(partial) { Self.applying($1, to: $0, options: options) } }
                        }
                    )
                }
                return results
            }
        )
    }

    /// Keeps the states `observation` agrees with; when none does, keeps them all and answers false (the failure is
    /// the caller's to report).
    @discardableResult
    mutating func keep(where observation: (World) -> Bool) -> Bool {
        let kept = worlds.filter(observation)
        guard !kept.isEmpty else { return false }
        worlds = kept
        return true
    }

    private static func unique(_ worlds: [World]) -> [World] {
        var seen: Set<World> = []
        return worlds.filter { seen.insert($0).inserted }
    }

    private static func orders(of operations: [Operation]) -> [[Operation]] {
        guard operations.count > 1 else { return [operations] }
        return operations.indices.flatMap { index in
            var rest = operations
            let first = rest.remove(at: index)
            return orders(of: rest).map { [first] + $0 }
        }
    }

    /// `operation` applied to `world`: the stored state changes, then the versions move with what changed in each view.
    static func applying(_ operation: Operation, to world: World, options: Options) -> World {
        var world = world
        switch operation {
        case .subscribe(let u, let t): world.subscriptions.insert([u, t])
        case .unsubscribe(let u, let t): world.subscriptions.remove([u, t])
        case .friend(let u, let t): world.friendships.insert([u, t])
        case .unfriend(let u, let t): world.friendships.remove([u, t])
        case .block(let u, let t):
            if !world.isBlocked(u, t) {
                world.blockVersions[[u, t]] = world.users[t]?.publicVersion ?? 0
                world.blockVersions[[t, u]] = world.users[u]?.publicVersion ?? 0
            }
            world.blocks.insert([u, t])
        case .unblock(let u, let t):
            world.blocks.remove([u, t])
            if !world.isBlocked(u, t) {
                world.blockVersions[[u, t]] = nil
                world.blockVersions[[t, u]] = nil
            }
        case .delete(let u):
            // Watchers are told as for a kick of every device (SPEC §10.3); then a user created again under the id is
            // a new user, with no relations, who goes on from the deleted one's versions: the deletion moves each
            // version the new user's view differs in (SPEC §10.5, versions never go back).
            let kicked = applying(.kick(u, device: nil), to: world, options: options).users[u] ?? User()
            world.users[u] = changing(kicked) { user in user = User(version: user.version, publicVersion: user.publicVersion) }
            world.subscriptions = world.subscriptions.filter { !$0.contains(u) }
            world.friendships = world.friendships.filter { !$0.contains(u) }
            world.blocks = world.blocks.filter { !$0.contains(u) }
            world.blockVersions = world.blockVersions.filter { !$0.key.contains(u) }
        default:
            let userId = operation.userId
            world.users[userId] = changing(world.users[userId] ?? User()) { user in
                apply(operation, to: &user, options: options)
            }
        }
        return world
    }

    /// Runs `change` on `user`; the version moves by 1 when the own view changed, the public version when the public
    /// view did (SPEC §2, §10.5).
    private static func changing(_ user: User, _ change: (inout User) -> Void) -> User {
        var after = user
        change(&after)
        if after.ownKey != user.ownKey { after.version += 1 }
        if after.publicShown != user.publicShown { after.publicVersion += 1 }
        return after
    }

    private static func leave(_ user: inout User, to statusType: StatusType) {
        user.devices = [:]
        user.inGrace = false
        user.resting = statusType
        user.customStatus = nil
        user.expires = false
        // A kick or a deletion ends a grace of going invisible at once, as it ends a grace.
        user.shownBeforeHiding = nil
    }

    private static func apply(_ operation: Operation, to user: inout User, options: Options) {
        switch operation {
        case .connect(_, let device):
            user.devices[device] = false
            user.inGrace = false
            user.autoAway = false
        case .drop(_, let device):
            guard user.devices.removeValue(forKey: device) != nil else { return }
            if user.devices.isEmpty {
                if options.graced { user.inGrace = true } else { leave(&user, to: .offline) }
            } else {
                user.autoAway = user.devices.values.allSatisfy { $0 }
            }
        case .logout(let u, let device):
            apply(.kick(u, device: device), to: &user, options: options)
        case .kick(_, let device):
            if let device {
                guard user.devices.removeValue(forKey: device) != nil else { return }
                if user.devices.isEmpty { leave(&user, to: .unlogined) } else { user.autoAway = user.devices.values.allSatisfy { $0 } }
            } else if !user.devices.isEmpty || user.inGrace {
                leave(&user, to: .unlogined)
            }
        case .setCustomStatus(_, let text, let expiring):
            user.customStatus = text
            user.expires = text != nil && expiring
            user.frozenCustomIsStored = false
        case .setAvailability(_, let availability):
            let wasInvisible = user.availability == "invisible"
            if availability == "invisible", !wasInvisible {
                if options.invisibleGrace, options.graced, user.statusType == .online {
                    user.shownBeforeHiding = user.publicShown
                    user.frozenCustomIsStored = true
                }
                user.hidden = user.statusType == .online ? .offline : user.resting
            } else if availability != "invisible", wasInvisible {
                user.hidden = nil
                user.shownBeforeHiding = nil
            }
            user.availability = availability
        case .setDeviceState(_, let device, let idle):
            guard user.devices[device] != nil else { return }
            user.devices[device] = idle
            user.autoAway = user.devices.values.allSatisfy { $0 }
        case .endGrace:
            if user.inGrace { leave(&user, to: .offline) }
        case .expire:
            if user.expires {
                if user.frozenCustomIsStored, user.shownBeforeHiding?.expires == true {
                    user.shownBeforeHiding?.customStatus = nil
                    user.shownBeforeHiding?.expires = false
                }
                user.customStatus = nil
                user.expires = false
            }
        case .endHiding:
            user.shownBeforeHiding = nil
        case .subscribe, .unsubscribe, .friend, .unfriend, .block, .unblock, .delete:
            break
        }
    }
}

extension PresenceModel.Operation {
    /// The user whose status the operation changes.
    var userId: String {
        switch self {
        case .connect(let u, _), .drop(let u, _), .kick(let u, _), .logout(let u, _), .delete(let u), .setCustomStatus(let u, _, _),
            .setAvailability(let u, _), .setDeviceState(let u, _, _), .subscribe(let u, _), .unsubscribe(let u, _),
            .friend(let u, _), .unfriend(let u, _), .block(let u, _), .unblock(let u, _), .endGrace(let u), .expire(let u),
            .endHiding(let u):
            u
        }
    }
}
