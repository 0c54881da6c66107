import Logging
import NIOCore
import StatusCore

/// What a device resuming a session is sent right after its welcome (SPEC §7; the design is in `docs/resume.md`): the
/// users it hears about whose version moved since the session named by its token lost its socket.
struct SessionResume: Sendable {
    /// The app's log of recent changes, for an app-wide scope.
    let recentChanges: RecentChangesLog
    let statuses: StatusRepository
    /// Sent instead when more moved than one resume reads from the log.
    let snapshot: SessionSnapshot
    let index: FanoutIndex
    /// Reads the session's relationships as they are now (the index learns of a change through the bus, later).
    let relations: RelationsLoader
    /// The most users a resume reads from the log (``ServerConfiguration/resumeLogReadLimit``).
    let logReadLimit: Int
    let logger: Logger

    /// SPEC §7 resume: one `onUserStatusChanged` frame with the current status of every user the session hears about
    /// whose version moved since the session named by `token` lost its socket; nil for an unknown or expired token,
    /// or when nothing moved. The session's own rights decide what it is sent, and lastActiveAt is shown as last-seen
    /// privacy allows. A failure to read is a plain connect. The frame comes with the statuses it carries (which the
    /// socket is then known to have been sent, ``OpeningFrames``). `stored` and `replaced`: the device's resume point
    /// and the device record the connect replaced, both read in the connect's step. `known`: the user's relationships,
    /// when the connect's admission read them.
    func missedChanges(
        token: String,
        session: DeviceSession,
        app: AppRecord,
        stored: ResumePoint?,
        replaced: DeviceRecord?,
        relations known: Relations? = nil
    ) async -> (frame: ByteBuffer, statuses: [UserStatus])? {
        do {
            guard let point = ResumePoint.since(token: token, stored: stored, replaced: replaced) else { return nil }
            let since = point.lostAt
            // Beyond its relationships, a device of scope `all` or `roles:` hears about anyone: the app's log of recent
            // changes names who moved since then.
            var others: [String] = []
            switch session.scope {
            case .all, .roles:
                if app.config.allowsStatusQuery {
                    let limit = logReadLimit
                    others = try await recentChanges.changed(appId: app.appId, since: since, limit: limit)
                    if others.count >= limit {
                        // More moved than one resume reads: rather than drop the rest, send the current status of
                        // everyone the device may hear about (SPEC §10.7), as a snapshot would.
                        let everyone = try await snapshot.read(session: session, app: app)
                        var own: [UserStatus] = []
                        if let stored = try await statuses.stored(appId: app.appId, userIds: [session.userId])[session.userId],
                            app.config.multiDeviceSync
                        {
                            let view = PresenceView.of(session.userId, seenBy: session.userId, blocked: .none, isFriend: false)
                            own = [stored.viewed(as: view, appDefault: app.config.lastSeenPrivacy)]
                        }
                        let statuses = (own + everyone.statuses).sorted { $0.userId < $1.userId }
                        let frame = DeviceFrames.StatusChanged(statuses: statuses, truncated: everyone.truncated ? true : nil)
                        return (WebSocketWire.text(frame.jsonBytes), statuses)
                    }
                }
            case .subscriptions, .friends:
                break
            }
            // The relationships as they are now, read from Redis: one made by another device or the backend just
            // before this connect may not have reached the index yet, and the device never had that user's state. The
            // connect's admission read them (`known`) when the user had no session here; one made after that read is
            // heard on the user's channel, which the session listened to before it, and caught up with like any other.
            let relationships: Relations
            if let known {
                relationships = known
            } else {
                relationships = try await relations.load(AppUser(appId: app.appId, userId: session.userId))
            }
            let watched = Entitlement.facts(of: session.userId, relations: relationships, including: others)
            let blocks =
                relationships.blocked.isEmpty
                ? BlockedUsers.none
                : BlockedUsers(
                    relationships.blocked,
                    publicVersionsAtBlock: try await statuses.blockVersions(appId: app.appId, viewer: session.userId)
                )
            var missed: [UserStatus] = []
            for chunk in watched.chunks(of: FanoutService.resyncChunk) {
                let statuses = try await statuses.stored(appId: app.appId, userIds: chunk.map(\.userId), viewer: session.userId)
                for facts in chunk {
                    guard let stored = statuses[facts.userId],
                        Entitlement.hears(facts, role: stored.role, scope: session.scope, config: app.config)
                    else { continue }
                    // SPEC §10.5: the user's own view moves with their version; everyone else's with the public one.
                    let view = PresenceView.of(
                        facts.userId,
                        seenBy: session.userId,
                        blocked: blocks,
                        isFriend: facts.isFriend,
                        frozen: stored.frozenForViewer
                    )
                    let news =
                        facts.isSelf
                        ? point.isNews(userId: facts.userId, version: stored.status.version, versionTime: stored.versionTime)
                        : point.isNews(userId: facts.userId, version: stored.record.publicVersion, versionTime: stored.publicTime)
                    guard news else { continue }
                    missed.append(stored.viewed(as: view, appDefault: app.config.lastSeenPrivacy))
                }
            }
            if session.scope.isAppWide, app.config.allowsStatusQuery, let audience = point.audience, !audience.appWide {
                // The lost session did not hear about everyone, this one does: whom it now sees and the lost one did not
                // hear about is new to it. Of what a snapshot of its scope lists (its relationships, the users of its
                // scope it sees online), those are added, but for the users on either side of a block.
                let listed = Set(missed.map(\.userId))
                let everyone = try await snapshot.read(session: session, app: app).statuses
                missed += everyone.filter {
                    !listed.contains($0.userId) && !relationships.blocked.contains($0.userId) && !audience.heard($0.userId)
                }
            }
            guard !missed.isEmpty else { return nil }
            missed.sort { $0.userId < $1.userId }
            return (WebSocketWire.text(DeviceFrames.StatusChanged(statuses: missed).jsonBytes), missed)
        } catch {
            logger.debug("resume skipped", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
