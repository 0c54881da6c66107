import NIOCore
import StatusCore

/// The current status of everyone a session may hear about (SPEC §10.6 snapshot), read once, in pipelined batches:
/// its relationships (§6 rules 2–3 and the `friends` scope) and, for an `all` or `roles:` scope, the users of that
/// scope it currently sees online, at most ``scopeLimit``. Each is shown as the session may see it (last-seen privacy
/// applies). A user on either side of a block with the session's user whom the session would hear about without the
/// block (a subscription, a friend, or one of its scope) is listed in the block mask, whatever their status, so that a
/// client replacing its cache with the snapshot drops what it knew of them, and learns nothing of them from whether
/// they are listed. A snapshot is no call: not rate-limited, not counted.
///
/// It serves `&snapshot=true` and a resume whose log of recent changes passed its bound (``RecentChanges/readLimit``):
/// rather than silently drop what lies beyond, that resume sends the snapshot instead.
struct SessionSnapshot: Sendable {
    let statuses: StatusRepository
    /// The app's online index, read for an app-wide scope.
    let listings: ListingStore
    let index: FanoutIndex
    /// The most users of an app-wide scope listed (``ServerConfiguration/snapshotScopeLimit``, ``scopeLimit`` unless
    /// configured).
    let scopeLimit: Int

    /// The most users of an `all`/`roles:` scope a snapshot lists; past it the frame says `"truncated": true`.
    static let scopeLimit = 1_000
    /// The most online users a snapshot examines (those it does not show: invisible, or whose role changed since they
    /// were listed under it).
    static let scopeScanLimit = 10_000

    struct Result: Sendable {
        var statuses: [UserStatus]
        var truncated: Bool
    }

    func read(session: DeviceSession, app: AppRecord) async throws -> Result {
        let config = app.config
        var shown: [UserStatus] = []
        var listed: Set<String> = [session.userId]
        let blocks = try await blockedUsers(of: session, app: app)
        let blocked = blocks.users
        for chunk in candidates(of: session, blocked: blocked).chunks(of: FanoutService.resyncChunk) {
            let statuses = try await statuses.stored(appId: app.appId, userIds: chunk.map(\.userId), viewer: session.userId)
            for facts in chunk {
                // Whom the session would hear about were there no block: a blocked one is shown in the mask.
                var unblocked = facts
                unblocked.blocked = false
                guard let stored = statuses[facts.userId], Entitlement.hears(unblocked, role: stored.role, scope: session.scope, config: config)
                else { continue }
                listed.insert(facts.userId)
                let view = PresenceView.of(
                    facts.userId,
                    seenBy: session.userId,
                    blocked: blocks,
                    isFriend: facts.isFriend,
                    frozen: stored.frozenForViewer
                )
                shown.append(stored.viewed(as: view, appDefault: config.lastSeenPrivacy))
            }
        }
        var truncated = false
        if session.scope.isAppWide, config.allowsStatusQuery {
            truncated = try await appendScope(of: session, app: app, blocked: blocks, listed: &listed, into: &shown)
        }
        shown.sort { $0.userId < $1.userId }
        return Result(statuses: shown, truncated: truncated)
    }

    /// The users on either side of a block with the session's user (the node's index), with the public versions their
    /// masks carry: what every view this session is shown takes its blocks from.
    func blockedUsers(of session: DeviceSession, app: AppRecord) async throws -> BlockedUsers {
        let blocked = index.blocked(by: session)
        guard !blocked.isEmpty else { return .none }
        return BlockedUsers(blocked, publicVersionsAtBlock: try await statuses.blockVersions(appId: app.appId, viewer: session.userId))
    }

    /// The session's relationships and, for an app-wide scope, the users on either side of a block with its user (any
    /// of them may be of its scope), each once.
    private func candidates(of session: DeviceSession, blocked: Set<String>) -> [Entitlement.Facts] {
        var facts = index.watched(by: session).filter { !$0.isSelf }
        guard session.scope.isAppWide else { return facts }
        let related = Set(facts.map(\.userId))
        for userId in blocked.sorted() where !related.contains(userId) && userId != session.userId {
            facts.append(Entitlement.Facts(userId: userId, isSelf: false, subscribes: false, isFriend: false, blocked: true))
        }
        return facts
    }

    /// Adds the online users of an app-wide scope, in id order, up to ``scopeLimit`` (as configured), leaving out the
    /// users on either side of a block (`blocked`, listed in the mask already); returns whether some were left out.
    private func appendScope(
        of session: DeviceSession,
        app: AppRecord,
        blocked: BlockedUsers,
        listed: inout Set<String>,
        into shown: inout [UserStatus]
    ) async throws -> Bool {
        var after: String?
        var added = 0
        var examined = 0
        while examined < Self.scopeScanLimit {
            let batch = FanoutService.resyncChunk
            // A `roles:` scope reads the online users of its roles only: a role nobody has costs one empty read.
            let ids: [String]
            if case .roles(let roles) = session.scope {
                ids = try await listings.onlinePage(appId: app.appId, roles: roles, after: after, limit: batch)
            } else {
                ids = try await listings.page(appId: app.appId, .online, after: after, limit: batch)
            }
            guard !ids.isEmpty else { return false }
            examined += ids.count
            after = ids.last
            let fresh = ids.filter { !listed.contains($0) && !blocked.users.contains($0) }
            let statuses = try await statuses.stored(appId: app.appId, userIds: fresh, viewer: session.userId)
            for userId in fresh {
                // Online as the device sees them: an invisible user is not (the public view, SPEC §10.5).
                guard let stored = statuses[userId] else { continue }
                let view = PresenceView.of(
                    userId,
                    seenBy: session.userId,
                    blocked: blocked,
                    isFriend: stored.viewerIsFriend ?? false,
                    frozen: stored.frozenForViewer
                )
                let seen = stored.viewed(as: view, appDefault: app.config.lastSeenPrivacy)
                guard seen.statusType == .online else { continue }
                let facts = Entitlement.Facts(userId: userId, isSelf: false, subscribes: false, isFriend: false, blocked: false)
                guard Entitlement.hears(facts, role: stored.role, scope: session.scope, config: app.config) else { continue }
                if added == scopeLimit { return true }
                listed.insert(userId)
                shown.append(seen)
                added += 1
            }
            if ids.count < batch { return false }
        }
        return true
    }

    /// The snapshot frame (SPEC §10.6): sent even when empty.
    static func frame(_ result: Result) throws -> ByteBuffer {
        WebSocketWire.text(DeviceFrames.Snapshot(statuses: result.statuses, truncated: result.truncated ? true : nil).jsonBytes)
    }
}
