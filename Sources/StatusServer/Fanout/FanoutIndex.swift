import StatusCore
import Synchronization

/// This node's sessions and its in-memory index "target user → local users who must hear about them" (ARCHITECTURE
/// "Fan-out"). Delivery is a lookup here: never a scan of all sessions, never a Redis read per recipient.
final class FanoutIndex: Sendable {
    fileprivate struct State {
        var users: [AppUser: LocalUser] = [:]
        /// target → local users subscribed to it.
        var subscribers: [AppUser: Set<String>] = [:]
        /// target → local users who are its friends.
        var friendsOf: [AppUser: Set<String>] = [:]
        /// appId → sessions with presence scope `all`.
        var scopeAll: [String: [String: DeviceSession]] = [:]
        /// appId → role → sessions with a `roles:` scope naming it.
        var scopeRoles: [String: [String: [String: DeviceSession]]] = [:]
        var sessionCount = 0
        /// appId → how many sessions of the app this node holds.
        var sessionsPerApp: [String: Int] = [:]
        /// The last relationship load started (loads are numbered in the order they start).
        var loadSequence: UInt64 = 0
        /// target → the version of its status this node delivered last, for the resynchronisation after a gap and to
        /// drop the second copy of a change heard on two channels; with the prune pass it was delivered in.
        var versions: [AppUser: DeliveredVersion] = [:]
        /// How many times ``pruneVersions()`` ran: a version delivered since the last pass is kept by the next one.
        var prunePass: UInt64 = 0
        /// target → the public version (SPEC §10.5) this node delivered last to others than the target's own devices.
        var publicVersions: [AppUser: Int64] = [:]
        /// How many times delivered versions were forgotten (``forgetDelivered(appId:userId:)``), and, while a catch-up
        /// is reading, when each user or app was forgotten: a catch-up that read a user before their deletion must not
        /// deliver the deleted user's status, nor record its version over the forgetting
        /// (``catchUpAudience(of:config:watcher:knownAtEdge:readAt:)``).
        var forgetCount: UInt64 = 0
        var forgottenUsers: [AppUser: UInt64] = [:]
        var forgottenApps: [String: UInt64] = [:]
        /// Catch-ups between ``beginCatchUp()`` and ``endCatchUp()``; the forgettings are noted only while there are some.
        var catchUpsReading = 0
        /// target → the recipients last worked out for its changes, with what they were worked out from. A user who
        /// changes often is heard by the same sessions each time: the cached groups are handed out as they are, so a
        /// change costs no lookup, no retain and no deduplication per recipient. Emptied by every change to the
        /// sessions or relationships here (``forgetAudiences()``), so an entry never outlives what it came from.
        var audiences: [AppUser: (inputs: AudienceInputs, audience: Audience)] = [:]
        /// The relationships of users whose last session left, while the node may still hear their channel.
        var departed = DepartedRelations()

        /// Drops the cached recipients: the sessions or relationships they came from changed.
        mutating func forgetAudiences() {
            if !audiences.isEmpty { audiences = [:] }
        }
    }

    /// What, besides the index, decides the recipients of a change (``recipients(of:inputs:in:)``).
    struct AudienceInputs: Equatable {
        /// The user's own devices hear it (`multiDeviceSync`).
        var ownDevices: Bool
        /// Others hear it: a change of the public view, of the status, in a premium app.
        var others: Bool
        var statusQuery: Bool
        var friendStatusNotify: Bool
        /// The changed user's role, for `roles:` scopes (nil when no scope can take it).
        var role: String?
        /// The last-seen privacy that splits the others into `seeing` and `masked`, when the change shows a
        /// `lastActiveAt` it may hide; nil when everyone sees it.
        var hidingPrivacy: LastSeenPrivacy?
    }

    /// Most targets whose recipients are kept: past it the cache starts again empty (an app-wide session hears every
    /// user of its app, so the targets are not bounded by the relationships held here).
    static let audienceCacheLimit = 20_000

    private let state = Mutex(State())

    /// Registers a session; returns true when it is its user's first session here (the caller then loads relations).
    @discardableResult
    func add(_ session: DeviceSession) -> Bool {
        state.withLock { state in
            let key = AppUser(appId: session.appId, userId: session.userId)
            // A deleted user's sessions may still be closing when a user created again under the id connects: that
            // user's relationships are read as for a first session.
            let first = state.users[key] == nil || state.users[key]?.deleted == true
            state.users[key]?.deleted = false
            state.forgetAudiences()
            state.users[key, default: LocalUser()].sessions[session.connectionId] = session
            state.sessionCount += 1
            state.sessionsPerApp[session.appId, default: 0] += 1
            switch session.scope {
            case .all:
                state.scopeAll[session.appId, default: [:]][session.connectionId] = session
            case .roles(let roles):
                for role in roles { state.scopeRoles[session.appId, default: [:]][role, default: [:]][session.connectionId] = session }
            case .subscriptions, .friends:
                break
            }
            return first
        }
    }

    /// Removes a session; the user's entry and index edges go with their last session.
    func remove(_ session: DeviceSession) {
        state.withLock { state in
            let key = AppUser(appId: session.appId, userId: session.userId)
            guard state.users[key]?.sessions.removeValue(forKey: session.connectionId) != nil else { return }
            state.forgetAudiences()
            state.sessionCount -= 1
            state.sessionsPerApp[session.appId, default: 1] -= 1
            if state.sessionsPerApp[session.appId] == 0 { state.sessionsPerApp[session.appId] = nil }
            switch session.scope {
            case .all:
                state.scopeAll[session.appId]?.removeValue(forKey: session.connectionId)
                if state.scopeAll[session.appId]?.isEmpty == true { state.scopeAll[session.appId] = nil }
            case .roles(let roles):
                for role in roles {
                    state.scopeRoles[session.appId]?[role]?.removeValue(forKey: session.connectionId)
                    if state.scopeRoles[session.appId]?[role]?.isEmpty == true { state.scopeRoles[session.appId]?[role] = nil }
                }
            case .subscriptions, .friends:
                break
            }
            if let user = state.users[key], user.sessions.isEmpty {
                if user.relationsSequence > 0 {
                    let relations = Relations(subscriptions: user.subscriptions, friends: user.friends, blocked: user.blocked)
                    state.departed.depart(key, .init(relations: relations, pinnedMasks: user.pinnedMasks, sequence: user.relationsSequence))
                }
                Self.setRelations(Relations(subscriptions: [], friends: [], blocked: []), for: key, in: &state)
                state.users[key] = nil
            }
        }
    }

    /// Gives a user's first session here the relationships kept from their last one (``DepartedRelations``), when
    /// the node heard the user's channel all along; answers whether it did (else the caller loads them).
    func restoreDeparted(_ key: AppUser) -> Bool {
        state.withLock { state in
            guard let user = state.users[key], user.relationsSequence == 0, let entry = state.departed.take(key) else { return false }
            Self.setRelations(entry.relations, for: key, in: &state)
            state.users[key]?.pinnedMasks = entry.pinnedMasks
            state.users[key]?.relationsSequence = entry.sequence
            return true
        }
    }

    /// Whether the user's relationships were read since their first session here joined (or given back).
    func knowsRelations(of key: AppUser) -> Bool {
        state.withLock { ($0.users[key]?.relationsSequence ?? 0) > 0 }
    }

    /// Drops the kept relationships of `users`: something changed them, or their channel is no longer heard.
    func forgetDeparted(_ users: some Sequence<AppUser>) {
        state.withLock { $0.departed.forget(users) }
    }

    /// Whether `user`'s relationships are kept (``DepartedRelations``): their channel is wanted until the hold drops it.
    func holdsDeparted(_ user: AppUser) -> Bool {
        state.withLock { $0.departed.holds(user) }
    }

    /// The bus feed had a gap: no relationships read before now are kept or restored.
    func invalidateDeparted() {
        state.withLock { state in state.departed.invalidate(through: state.loadSequence) }
    }

    /// Numbers a relationship load about to start; pass the number to ``update(_:relations:sequence:)``.
    func beginRelationsLoad() -> UInt64 {
        state.withLock { state in
            state.loadSequence += 1
            return state.loadSequence
        }
    }

    /// Replaces a local user's relationships and the index edges that come from them, unless a load that started
    /// later was applied already (a read that started earlier may have missed a change the later one saw).
    /// Returns whether it applied.
    @discardableResult
    func update(_ key: AppUser, relations: Relations, sequence: UInt64) -> Bool {
        update(key, relations: relations, sequence: sequence, noting: []) != nil
    }

    /// ``update(_:relations:sequence:)`` that also answers, for each of `targets` that becomes a relationship of the user
    /// with this load, the public version this node had delivered of it at that moment (-1 for none): what reached
    /// the node before, the user's sessions missed; what reached it after, they heard. Nil when the load was dropped.
    func update(_ key: AppUser, relations: Relations, sequence: UInt64, noting targets: Set<String>) -> [String: Int64]? {
        state.withLock { state in
            guard let user = state.users[key] else {
                // The user left meanwhile: the read may have raced a change, so what was kept of them goes too.
                state.departed.forget([key])
                return nil
            }
            guard sequence > user.relationsSequence, sequence > user.loadsReadBefore else { return nil }
            var atEdge: [String: Int64] = [:]
            for target in targets where !user.subscriptions.contains(target) && !user.friends.contains(target) {
                guard relations.subscriptions.contains(target) || relations.friends.contains(target) else { continue }
                atEdge[target] = state.publicVersions[AppUser(appId: key.appId, userId: target)] ?? -1
            }
            state.users[key]?.relationsSequence = sequence
            Self.setRelations(relations, for: key, in: &state)
            return atEdge
        }
    }

    /// Every user whose changes a local device may hear about through its relationships or as its own: the users
    /// re-read after a gap in the bus feed, by app.
    func watchedTargets() -> [String: [String]] {
        state.withLock { state in Self.watchedTargets(state).mapValues { Array($0) } }
    }

    /// Forgets the delivered versions of users nobody here watches through a relationship or as their own, unless
    /// delivered since the pass before (the housekeeping calls it every third of a lease). A user heard only through
    /// an app-wide scope is not watched, yet each change of theirs comes twice, on their user channel and on their
    /// app's slot channel: the version is kept past one pass, so that a pass between the two copies (a gap splits them
    /// into two batches, a resynchronisation between) does not make the second one news again.
    func pruneVersions() {
        state.withLock { state in
            let targets = Self.watchedTargets(state)
            let recent = state.prunePass
            state.prunePass += 1
            state.versions = state.versions.filter {
                $0.value.pass == recent || targets[$0.key.appId]?.contains($0.key.userId) == true
            }
            let versions = state.versions
            state.publicVersions = state.publicVersions.filter {
                versions[$0.key] != nil || targets[$0.key.appId]?.contains($0.key.userId) == true
            }
        }
    }

    private static func watchedTargets(_ state: State) -> [String: Set<String>] {
        var targets: [String: Set<String>] = [:]
        for key in state.users.keys { targets[key.appId, default: []].insert(key.userId) }
        for key in state.subscribers.keys { targets[key.appId, default: []].insert(key.userId) }
        for key in state.friendsOf.keys { targets[key.appId, default: []].insert(key.userId) }
        return targets
    }

    /// A user (every user of an app, for a nil `userId`) was deleted, as the deletion's message says or a
    /// resynchronisation after a gap found: the masks pinned on them go (``unpinMasks(appId:target:)``), and what was
    /// delivered of them and kept of relationships is forgotten (``forgetDelivered(appId:userId:)``).
    func forgetDeleted(appId: String, userId: String?) {
        if let userId { unpinMasks(appId: appId, target: userId) }
        forgetDelivered(appId: appId, userId: userId)
    }

    /// Forgets what this node delivered of a deleted user (of every user of a deleted app, for a nil `userId`): the
    /// users of an app created again under the id start anew from version 0, and their changes must not be dropped as
    /// stale ones of the users who were deleted. (A user deleted alone leaves their versions to a user created again,
    /// `status_retire.lua`; they are forgotten the same way, which costs nothing: the successor's are newer.) With
    /// them goes what the node knows of relationships: what was kept of departed users, and those of the deleted users'
    /// sessions still here, whose next session is read anew (``LocalUser/deleted``).
    func forgetDelivered(appId: String, userId: String?) {
        state.withLock { state in
            state.forgetCount += 1
            if state.catchUpsReading > 0 {
                if let userId {
                    state.forgottenUsers[AppUser(appId: appId, userId: userId)] = state.forgetCount
                } else {
                    state.forgottenApps[appId] = state.forgetCount
                }
            }
            // A deleted user leaves the relationships of others (blocks and pins included): nothing of the app is kept,
            // nor kept later from what was read before now: the deleted user's sessions may still be closing, and what
            // the node read of their relationships must not outlive them and be given to a successor under the id.
            state.departed.forget(appId: appId)
            state.departed.invalidate(through: state.loadSequence)
            // The deleted users' sessions here are closing; their relationships go now, not when the last one has
            // closed, so that a user created again under the id who connects meanwhile does not take them.
            for key in state.users.keys where key.appId == appId && (userId == nil || key.userId == userId) {
                Self.setRelations(Relations(subscriptions: [], friends: [], blocked: []), for: key, in: &state)
                state.users[key]?.pinnedMasks = []
                state.users[key]?.relationsSequence = 0
                state.users[key]?.loadsReadBefore = state.loadSequence
                state.users[key]?.deleted = true
            }
            if let userId {
                let target = AppUser(appId: appId, userId: userId)
                state.versions[target] = nil
                state.publicVersions[target] = nil
                state.audiences[target] = nil
            } else {
                state.versions = state.versions.filter { $0.key.appId != appId }
                state.publicVersions = state.publicVersions.filter { $0.key.appId != appId }
                state.forgetAudiences()
            }
        }
    }

    /// Whether a device here may hear about `target` (its own user, or a relationship of a local user): whether this node
    /// must listen to the target's user channel.
    func isWatched(_ target: AppUser) -> Bool {
        state.withLock { $0.users[target] != nil || $0.subscribers[target] != nil || $0.friendsOf[target] != nil }
    }

    /// Whether a session here has presence scope `all` or `roles:` in `appId`: whether this node must listen to the
    /// app's slot channels.
    func hasAppWideSessions(_ appId: String) -> Bool {
        state.withLock { $0.scopeAll[appId] != nil || $0.scopeRoles[appId] != nil }
    }

    /// The apps of which a session here has presence scope `all` or `roles:`.
    func appWideApps() -> [String] {
        state.withLock { Array(Set($0.scopeAll.keys).union($0.scopeRoles.keys)) }
    }

    /// The users whose user channels a change of `key`'s sessions or relationships may start or stop: the user and
    /// everyone they relate to.
    func interest(of key: AppUser) -> Set<AppUser> {
        state.withLock { state in
            var result: Set<AppUser> = [key]
            guard let user = state.users[key] else { return result }
            for target in user.subscriptions.union(user.friends) { result.insert(AppUser(appId: key.appId, userId: target)) }
            return result
        }
    }

    /// Whether `stored` differs from what this node delivered last of it: its version (to the user's own devices) or
    /// its public version (to others), or nothing was delivered of it yet. `public` says whether the public version did.
    /// A status at version 0 of a user nothing was delivered of never changed (the user never logged in): nothing of it
    /// can have been missed, and a resynchronisation that read it just before the user's first connect must not tell it
    /// after that connect's change. Of a user something was delivered of, it is a deletion this node did not hear (of
    /// the user's app, whose message came during the gap): it is told, and the successor's changes that follow are not
    /// taken for stale ones of the user who was deleted.
    func hasMoved(_ stored: StoredStatus, appId: String) -> (any: Bool, public: Bool) {
        state.withLock { state in
            let key = AppUser(appId: appId, userId: stored.status.userId)
            guard stored.status.version > 0 || state.versions[key] != nil else { return (false, false) }
            let publicMoved = state.publicVersions[key] != stored.record.publicVersion
            return (state.versions[key]?.version != stored.status.version || publicMoved, publicMoved)
        }
    }

    /// The relationships held here at one moment: a copy of the index's state, which costs nothing until the index
    /// changes next (each part is copied then, once). A resynchronisation takes one before it reads every local user's
    /// relationships again, for the subscribers and friends of users deleted during the gap (``relatedDelivered(in:)``,
    /// ``audience(ofDeletion:config:relatedAsIn:)``).
    struct RelationsSnapshot: @unchecked Sendable {
        fileprivate let state: State
    }

    func relationsSnapshot() -> RelationsSnapshot {
        state.withLock { RelationsSnapshot(state: $0) }
    }

    /// The users a session here heard about through a subscription or a friendship in `snapshot`, by app, of whom this
    /// node delivered a status: those whose deletion during a bus gap their devices must still be told of.
    func relatedDelivered(in snapshot: RelationsSnapshot) -> [String: [String]] {
        let related = Set(snapshot.state.subscribers.keys).union(snapshot.state.friendsOf.keys)
        return state.withLock { state in
            var targets: [String: [String]] = [:]
            for key in related where state.versions[key] != nil { targets[key.appId, default: []].append(key.userId) }
            return targets
        }
    }

    /// Whether this node delivered a status of the user older than `stored` in either version. Of what a deletion kept
    /// (``StatusRepository/retired(appId:userIds:)``), it tells a deletion this node did not hear: what it delivered
    /// since hearing one, of a user created again after it, is from the deletion's versions on.
    func deliveredBefore(_ stored: StoredStatus, appId: String) -> Bool {
        state.withLock { state in
            let key = AppUser(appId: appId, userId: stored.status.userId)
            guard let delivered = state.versions[key]?.version else { return false }
            return delivered < stored.status.version || (state.publicVersions[key] ?? delivered) < stored.record.publicVersion
        }
    }

    /// The sessions a deletion this node did not hear is told to (`change`: what the deletion kept, as the new user
    /// starts): those entitled to it under the relationships, blocks and scopes of `snapshot`, taken before the
    /// deletion's removal of every subscription and friendship to the user was read. Recorded as delivered.
    func audience(ofDeletion change: StatusChange, config: AppConfig, relatedAsIn snapshot: RelationsSnapshot) -> Audience {
        state.withLock { state in
            let inputs = Self.inputs(of: change, config: config, publicToo: true, ownToo: false)
            let result = Self.recipients(of: change, inputs: inputs, in: snapshot.state)
            Self.recordDelivered(change, result, in: &state)
            return result
        }
    }

    /// The users among `userIds` of whom this node delivered a status (and has not forgotten it since).
    func delivered(appId: String, among userIds: some Sequence<String>) -> [String] {
        state.withLock { state in userIds.filter { state.versions[AppUser(appId: appId, userId: $0)] != nil } }
    }

    /// The local users of `appId` among `userIds` (whose relations must be reloaded).
    func localUsers(appId: String, among userIds: [String]) -> [AppUser] {
        state.withLock { state in
            userIds.map { AppUser(appId: appId, userId: $0) }.filter { state.users[$0] != nil }
        }
    }

    /// Every local user (to reload after the bus reconnects).
    func allLocalUsers() -> [AppUser] {
        state.withLock { Array($0.users.keys) }
    }

    /// Sessions of a user on this node.
    func sessions(of key: AppUser) -> [DeviceSession] {
        state.withLock { Array(($0.users[key]?.sessions ?? [:]).values) }
    }

    /// Sessions of every user of an app on this node.
    func sessions(ofApp appId: String) -> [DeviceSession] {
        state.withLock { state in state.users.filter { $0.key.appId == appId }.flatMap { $0.value.sessions.values } }
    }

    /// The sessions whose last sign of life (``DeviceSession/lastActiveMs``) is before their app's deadline; sessions
    /// of apps without one are left alone. One pass under the lock, nothing copied but what it returns: the
    /// housekeeping asks twice a second, and copying every session each time cost a tenth of an idle node's CPU.
    func sessions(lastActiveBefore deadlines: [String: Int64]) -> [DeviceSession] {
        state.withLock { state in
            var silent: [DeviceSession] = []
            for (key, user) in state.users {
                guard let deadline = deadlines[key.appId] else { continue }
                for session in user.sessions.values where session.lastActiveMs < deadline {
                    silent.append(session)
                }
            }
            return silent
        }
    }

    /// The apps this node holds sessions of.
    func appIds() -> [String] {
        state.withLock { Array($0.sessionsPerApp.keys) }
    }

    /// Every session on this node.
    func allSessions() -> [DeviceSession] {
        state.withLock { state in state.users.values.flatMap { $0.sessions.values } }
    }

    /// Whether this node holds any session of the app (a status change of an app without one needs no decoding).
    func hasSessions(ofApp appId: String) -> Bool {
        state.withLock { $0.sessionsPerApp[appId] != nil }
    }

    /// How many sessions this node holds.
    var count: Int { state.withLock { $0.sessionCount } }

    /// How many users have a session on this node.
    var userCount: Int { state.withLock { $0.users.count } }

    /// The sessions that must receive a change of `change.status.userId` under `config` (SPEC §6), each once, split by
    /// what they may see of it (SPEC §2 last-seen privacy: the user's own setting carried by the change, else the app
    /// default). The split costs nothing while the user lets everyone see `lastActiveAt`.
    func audience(of change: StatusChange, config: AppConfig) -> Audience {
        state.withLock { state in
            let target = AppUser(appId: change.appId, userId: change.status.userId)
            let publicNews = Self.isPublicNews(change, in: state)
            let statusChange = change.change == StatusRepository.Change.status.rawValue
            let known = state.versions[target]?.version
            if let known, known > change.status.version || (known == change.status.version && statusChange && !publicNews) {
                // Older than what was delivered already (a resynchronisation overtook it), or a status change heard a
                // second time (on the user's channel and on the app's): stale. A devices-only change repeats the
                // current version by design and is never dropped for it, and so does a change of the public view
                // alone (SPEC §10.5: the grace of becoming invisible ending), which only others hear.
                return Audience()
            }
            let ownNews = !statusChange || known != change.status.version
            let inputs = Self.inputs(of: change, config: config, publicToo: publicNews, ownToo: ownNews)
            let result: Audience
            if let cached = state.audiences[target], cached.inputs == inputs {
                result = cached.audience
            } else {
                result = Self.recipients(of: change, inputs: inputs, in: state)
                if !result.isEmpty {
                    if state.audiences.count >= Self.audienceCacheLimit { state.audiences = [:] }
                    state.audiences[target] = (inputs, result)
                }
            }
            Self.recordDelivered(change, result, in: &state)
            return result
        }
    }

    /// Whether a change tells others something (SPEC §10.5): the public view changed, to a public version this node did
    /// not deliver yet.
    private static func isPublicNews(_ change: StatusChange, in state: State) -> Bool {
        guard change.publicChange else { return false }
        let target = AppUser(appId: change.appId, userId: change.status.userId)
        guard let known = state.publicVersions[target] else { return true }
        return change.record.publicVersion > known
    }

    private static func recordDelivered(_ change: StatusChange, _ result: Audience, in state: inout State) {
        let target = AppUser(appId: change.appId, userId: change.status.userId)
        if !result.isEmpty { state.versions[target] = DeliveredVersion(version: change.status.version, pass: state.prunePass) }
        if !result.seeing.isEmpty || !result.masked.isEmpty { state.publicVersions[target] = change.record.publicVersion }
    }

    /// The recipients of a change that `watcher` may have missed while this node was not yet hearing its target
    /// (``FanoutService`` catch-up after a relationship change): everyone entitled here but the target's own devices
    /// when this node has not delivered that public version yet (the bus copy, if it comes, is then dropped as stale),
    /// else only `watcher`'s sessions, who were not listening when the others heard it.
    /// `knownAtEdge`: the public version this node had delivered of the target when the watcher's relationship to it
    /// began (``update(_:relations:sequence:noting:)``); a version delivered after that reached the watcher with the
    /// others and is not sent again. Nil when unknown: then the watcher gets it (a repeat it drops by its version
    /// rather than a loss).
    /// `readAt`: what ``beginCatchUp()`` answered before the status was read. A target forgotten since (deleted, with
    /// its app or alone) gets nothing: what was read may be the deleted user's, and recording its public version would
    /// drop the changes of a user created again under the id (from version 0, with a new app) as stale ones.
    func catchUpAudience(
        of change: StatusChange,
        config: AppConfig,
        watcher: AppUser,
        knownAtEdge: Int64? = nil,
        readAt: UInt64? = nil
    ) -> Audience {
        state.withLock { state in
            let target = AppUser(appId: change.appId, userId: change.status.userId)
            if let readAt, readAt < state.forgetCount {
                let forgotten = max(state.forgottenUsers[target] ?? 0, state.forgottenApps[target.appId] ?? 0)
                if forgotten > readAt { return Audience() }
            }
            var result = Self.recipients(of: change, inputs: Self.inputs(of: change, config: config, publicToo: true), in: state)
            result.own = Recipients()
            if let known = state.publicVersions[target], known >= change.record.publicVersion {
                if let knownAtEdge, change.record.publicVersion > knownAtEdge { return Audience() }
                result.seeing.keep { $0.userId == watcher.userId }
                result.masked.keep { $0.userId == watcher.userId }
                return result
            }
            if !result.isEmpty { state.publicVersions[target] = change.record.publicVersion }
            return result
        }
    }

    /// Starts a catch-up's read: answers the moment to pass to ``catchUpAudience(of:config:watcher:knownAtEdge:readAt:)``.
    /// Pair with ``endCatchUp()``.
    func beginCatchUp() -> UInt64 {
        state.withLock { state in
            state.catchUpsReading += 1
            return state.forgetCount
        }
    }

    /// Ends a catch-up begun with ``beginCatchUp()``; with none left reading, the forgettings noted for them go.
    func endCatchUp() {
        state.withLock { state in
            state.catchUpsReading -= 1
            if state.catchUpsReading == 0 {
                state.forgottenUsers = [:]
                state.forgottenApps = [:]
            }
        }
    }

    /// Which of `targets` the local user hears about through a subscription or a friendship.
    func related(_ key: AppUser, among targets: some Sequence<String>) -> [String] {
        state.withLock { state in
            guard let user = state.users[key] else { return [] }
            return targets.filter { user.subscriptions.contains($0) || user.friends.contains($0) }
        }
    }

    /// What decides the recipients of `change` under `config` besides the index: whether the user's own devices hear
    /// it, whether others do (`publicToo`: the public view changed), and the privacy that splits them.
    private static func inputs(of change: StatusChange, config: AppConfig, publicToo: Bool, ownToo: Bool = true) -> AudienceInputs {
        let others = publicToo && change.change == StatusRepository.Change.status.rawValue && config.plan == .premium
        let record = change.record
        let privacy = change.lastSeenPrivacy ?? config.lastSeenPrivacy
        let publicLastActive = record.isHidden ? record.hidden?.lastActiveAt : change.status.lastActiveAt
        return AudienceInputs(
            ownDevices: config.multiDeviceSync && ownToo,
            others: others,
            statusQuery: config.statusQuery,
            friendStatusNotify: config.friendStatusNotify,
            role: others && config.statusQuery ? change.role : nil,
            hidingPrivacy: others && publicLastActive != nil && privacy != .everyone ? privacy : nil
        )
    }

    /// The sessions entitled to a change (SPEC §6): the user's own (the own view), and, when `inputs.others`, the
    /// others (the public view, SPEC §10.5) split by whether they may see its `lastActiveAt`.
    private static func recipients(of change: StatusChange, inputs: AudienceInputs, in state: State) -> Audience {
        let target = AppUser(appId: change.appId, userId: change.status.userId)
        // Sessions are deduplicated by identity: no string is hashed per recipient beyond the one lookup of its user.
        var result = Audience()
        var seen = Set<ObjectIdentifier>()
        if inputs.ownDevices, let own = state.users[target] {
            for session in own.sessions.values where seen.insert(ObjectIdentifier(session)).inserted { result.own.append(session) }
        }
        guard inputs.others else { return result }
        func addUser(_ userId: String, where include: (DeviceSession) -> Bool = { _ in true }) {
            guard userId != target.userId, let user = state.users[AppUser(appId: change.appId, userId: userId)] else { return }
            // Whom the user blocks is known once their relationships are read: an `all` or `roles:` session is in the
            // index from its join, before that (SPEC §6: a change never goes to a user on either side of a block).
            guard user.relationsSequence > 0 else { return }
            guard user.blocked.isEmpty || !user.blocked.contains(target.userId) else { return }
            let sees = inputs.hidingPrivacy?.shows(to: .other(isFriend: user.friends.contains(target.userId))) ?? true
            for session in user.sessions.values where include(session) && seen.insert(ObjectIdentifier(session)).inserted {
                if sees { result.seeing.append(session) } else { result.masked.append(session) }
            }
        }
        func addSession(_ session: DeviceSession) {
            addUser(session.userId) { $0 === session }
        }
        let friends = state.friendsOf[target] ?? []
        if inputs.statusQuery {
            let subscribers = state.subscribers[target] ?? []
            seen.reserveCapacity(subscribers.count)
            for userId in subscribers { addUser(userId) }
            for session in (state.scopeAll[change.appId] ?? [:]).values { addSession(session) }
            for userId in friends {
                addUser(userId) { if case .friends = $0.scope { true } else { false } }
            }
            if let role = inputs.role {
                for session in (state.scopeRoles[change.appId]?[role] ?? [:]).values { addSession(session) }
            }
        }
        if inputs.friendStatusNotify {
            for userId in friends { addUser(userId) }
        }
        return result
    }

    /// The users a session hears about through its relationships or as its own, and `others` (users it may hear about
    /// through its presence scope), each once, with what decides whether it may (``Entitlement``): the users a resuming
    /// device is brought up to date about (SPEC §7).
    func watched(by session: DeviceSession, including others: [String] = []) -> [Entitlement.Facts] {
        state.withLock { state in
            guard let user = state.users[AppUser(appId: session.appId, userId: session.userId)] else { return [] }
            return Entitlement.facts(
                of: session.userId,
                subscriptions: user.subscriptions,
                friends: user.friends,
                blocked: user.blocked,
                including: others
            )
        }
    }

    /// The users on either side of a block with the session's user (empty when the user has no session here): a
    /// snapshot shows each of them in the block mask, never as they are (SPEC §10.5, §10.6).
    func blocked(by session: DeviceSession) -> Set<String> {
        state.withLock { $0.users[AppUser(appId: session.appId, userId: session.userId)]?.blocked ?? [] }
    }

    private static func setRelations(_ relations: Relations, for key: AppUser, in state: inout State) {
        guard let old = state.users[key] else { return }
        state.forgetAudiences()
        for target in old.subscriptions.subtracting(relations.subscriptions) {
            let edge = AppUser(appId: key.appId, userId: target)
            state.subscribers[edge]?.remove(key.userId)
            if state.subscribers[edge]?.isEmpty == true { state.subscribers[edge] = nil }
        }
        for target in relations.subscriptions.subtracting(old.subscriptions) {
            state.subscribers[AppUser(appId: key.appId, userId: target), default: []].insert(key.userId)
        }
        for target in old.friends.subtracting(relations.friends) {
            let edge = AppUser(appId: key.appId, userId: target)
            state.friendsOf[edge]?.remove(key.userId)
            if state.friendsOf[edge]?.isEmpty == true { state.friendsOf[edge] = nil }
        }
        for target in relations.friends.subtracting(old.friends) {
            state.friendsOf[AppUser(appId: key.appId, userId: target), default: []].insert(key.userId)
        }
        state.users[key]?.subscriptions = relations.subscriptions
        state.users[key]?.friends = relations.friends
        state.users[key]?.blocked = relations.blocked.union(old.pinnedMasks)
    }

    /// Applies a block heard on the bus (``BlockMask``) to the viewer's local user, if it has sessions here; returns the
    /// viewer's sessions that are to be shown the mask at once, with its version (none without the app's `config`).
    func applyMask(
        appId: String,
        target: String,
        viewer: String,
        frozen: Int64?,
        role: String? = nil,
        config: AppConfig?
    ) -> (Recipients, Int64)? {
        state.withLock { state in
            let key = AppUser(appId: appId, userId: viewer)
            state.departed.forget([key, AppUser(appId: appId, userId: target)])
            guard var user = state.users[key] else { return nil }
            let outcome = BlockMask.apply(target: target, frozen: frozen, to: &user)
            state.users[key] = user
            if outcome.changed { state.forgetAudiences() }
            guard let version = outcome.showAt, let config else { return nil }
            var recipients = Recipients()
            for session in user.sessions.values where BlockMask.hears(target, role: role, user: user, scope: session.scope, config: config) {
                recipients.append(session)
            }
            return recipients.isEmpty ? nil : (recipients, version)
        }
    }

    /// Drops the masks heard on the bus: of `target` only (a deleted user), or all (a gap: every relationship is read
    /// again, and what Redis holds decides). A deleted user's blocks went with them, before the message that says so:
    /// they leave the viewer's blocked set too, whatever a relationship reload that ran first kept of the pin (the
    /// reload is told on the viewer's channel, the deletion on the deleted user's, in no set order). A block of a user
    /// created again under the id comes after the deletion on the same channel, and pins again.
    func unpinMasks(appId: String? = nil, target: String? = nil) {
        state.withLock { state in
            for key in Array(state.users.keys) where appId == nil || key.appId == appId {
                guard let pinned = state.users[key]?.pinnedMasks, !pinned.isEmpty else { continue }
                if let target {
                    guard pinned.contains(target) else { continue }
                    state.users[key]?.pinnedMasks.remove(target)
                    state.users[key]?.blocked.remove(target)
                    state.forgetAudiences()
                } else {
                    state.users[key]?.pinnedMasks = []
                }
            }
        }
    }
}
