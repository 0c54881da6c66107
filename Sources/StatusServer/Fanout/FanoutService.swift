import Foundation
import Logging
import NIOCore
import RedisClient
import ServiceLifecycle
import StatusCore
import Synchronization

/// Listens to the bus and acts on this node's sessions: delivers status changes through the fan-out index,
/// has relationships that changed reloaded, closes kicked or replaced devices, drops stale config. After any gap in
/// the feed it resynchronises, so that nothing is lost (SPEC §9).
///
/// Interest routing (``BusChannels``): the node listens to the user channel of every user its devices belong to or may
/// hear about, and to an app's slot channels while it holds an `all`/`roles:` session of the app; the index says which
/// (``FanoutIndex/isWatched(_:)``), and every change to a session or a relationship brings the subscriptions in line
/// before the session goes on. App-wide control messages come on the classic control channel.
///
/// Delivery path: the bus connection pushes payloads into a bounded ``BusInbox``; this service takes everything waiting
/// as one batch, decodes each message once, encodes each change once (``StatusEvent``), groups the recipients by the
/// event loop of their channel and hands each loop its share in one task, which writes to every socket and flushes
/// each once. No task, stream or Redis read per recipient.
///
/// Gaps: a resubscription (the connection dropped, Redis restarted, or a ping went unanswered) or an overflow of the
/// inbox. Then every local user's relationships are reloaded, and the current status of every user watched here is
/// read and delivered where its version differs from the one delivered last.
final class FanoutService: Service, Sendable {
    /// Statuses read per round trip when resynchronising.
    static let resyncChunk = 500

    private let index: FanoutIndex
    private let apps: AppRegistry
    private let statuses: StatusRepository
    private let relations: RelationsLoader
    private let deviceRecords: DeviceRecordStore
    private let recentChanges: RecentChangesLog
    /// How long the log of recent changes keeps an entry, which the mark of app-wide listeners lasts.
    private let recorder: ChangeRecorder
    private let subscriber: RedisSubscriber
    private let shards: RedisShardSubscriber
    private let inbox: BusInbox
    private let work: DeviceWorkQueue
    /// Where deliveries wait for their event loops.
    private let mailboxes = LoopMailboxes()
    /// The node's time: the pause before retrying a resynchronisation Redis refused.
    private let clock: any NodeClock
    /// What the fan-out counts: deliveries, bus gaps and drops, resynchronisations.
    private let metrics: NodeMetrics
    private let logger: Logger
    /// Whether a vanished device record may be the survivors' filing of this node's devices, not a kick.
    private let lease: SharedLease
    /// Set when interest went away since the last ``dropUnwatchedChannels()``.
    private let mayHaveUnwatchedChannels = Atomic<Bool>(false)
    /// The unwatched channels kept for one more pass (or more, while connects run late).
    private let unwatchedHold = Mutex(UnwatchedChannelHold())
    /// Set when an upgrade waited for its turn for ``UnwatchedChannelHold/lateConnectMs`` or more since the last
    /// ``dropUnwatchedChannels()``.
    private let connectsRanLate = Atomic<Bool>(false)
    /// From when the feed may have missed messages: the users of the app-wide scopes re-read after a gap are the ones
    /// the app's log of recent changes names since then (``appWideTargets(since:)``).
    private let watermark: SharedFeedWatermark
    /// The relationships held here when the bus feed was lost, kept until a resynchronisation completes: the
    /// subscribers and friends of a user deleted during the gap are told from them (``tellOfDeletionsMissed(relatedAsIn:)``),
    /// since a relationship change heard once the feed is back may already have removed the deleted user from them.
    private let relationsAtLoss: HeldSnapshot

    /// The fan-out of a node: `feed` makes its bus subscribers, the repositories are what it reads when a session
    /// joins, a relationship changes or the feed had a gap.
    init(
        index: FanoutIndex,
        apps: AppRegistry,
        statuses: StatusRepository,
        relations: RelationsLoader,
        deviceRecords: DeviceRecordStore,
        recentChanges: RecentChangesLog,
        recorder: ChangeRecorder,
        feed: BusFeed,
        work: DeviceWorkQueue,
        inboxLimit: Int,
        lease: SharedLease,
        clock: any NodeClock,
        metrics: NodeMetrics,
        logger: Logger
    ) {
        self.lease = lease
        self.index = index
        self.apps = apps
        self.statuses = statuses
        self.relations = relations
        self.deviceRecords = deviceRecords
        self.recentChanges = recentChanges
        self.recorder = recorder
        self.work = work
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        let watermark = SharedFeedWatermark(FeedWatermark(nowMs: clock.nowMs))
        self.watermark = watermark
        let inbox = BusInbox(limit: inboxLimit, dropped: metrics.busEventsDropped)
        self.inbox = inbox
        let relationsAtLoss = HeldSnapshot()
        self.relationsAtLoss = relationsAtLoss
        let subscribers = feed.subscribers(logger: logger) { event in
            switch event {
            case .message(_, let payload): inbox.push(payload)
            case .subscribed: inbox.markGap()
            case .lost(let wholeUntil):
                // The connection's monotonic moment, on the node's wall clock.
                let wholeUntilMs = clock.nowMs - (NIODeadline.now() - wholeUntil).nanoseconds / 1_000_000
                watermark.state.withLock { $0.lost(wholeUntilMs: wholeUntilMs) }
                // The earliest since the last resynchronisation (a copy that costs nothing until the index changes).
                relationsAtLoss.held.withLock { if $0 == nil { $0 = index.relationsSnapshot() } }
            }
        }
        self.subscriber = subscribers.control
        self.shards = subscribers.shards
    }

    func run() async throws {
        try await withTaskCancellationHandler {
            try await withGracefulShutdownHandler {
                try await withThrowingDiscardingTaskGroup { group in
                    group.addTask { try await self.subscriber.run() }
                    group.addTask { try await self.shards.run() }
                    // Under `withNodeTaskExecutor`, woken by the bus connection's loop, the consumer runs there.
                    while let batch = await inbox.next() {
                        await process(batch)
                    }
                    group.cancelAll()
                }
            } onGracefulShutdown: {
                self.inbox.finish()
            }
        } onCancel: {
            self.inbox.finish()
        }
        await closeAllSessions()
    }

    /// How a session joined the index (``join(_:)``), for its connect's admission and ``settle(_:joining:relations:)``.
    struct Joining: Sendable {
        /// The sequence of the read of the user's relationships (``FanoutIndex/beginRelationsLoad()``), when the user
        /// had no session here: the node does not know them yet.
        var load: UInt64?
        /// Whether the node already heard the user's own channel when the session joined.
        var heard: Bool
        /// Whether the user's relationships were the ones kept from their last session here (``DepartedRelations``).
        var restored = false
        /// Whether nothing is left to read or subscribe for the session: the node knows the user's relationships and
        /// hears the user's channel and theirs. The connect then needs no admission of its own: `device_connect.lua`
        /// checks the connect rate limit first, and a refusal costs Redis that check only (SPEC §10.7).
        var settled = false

        /// Whether the admission reads the relationships in its own step: only when they are to be read and the user's
        /// channel is heard already, so that a relationship change made after that read reaches the node.
        var admissionReadsRelations: Bool { load != nil && heard }
    }

    /// The first half of a session's registration, before its connect's admission: adds the session to the index and
    /// asks whether the node hears the user's own channel already; if it did all along since the user's last session
    /// here, the relationships kept from it are the user's (``DepartedRelations``). Nothing is sent to Redis: a connect
    /// the admission refuses subscribes to nothing (SPEC §10.7).
    func join(_ session: DeviceSession) async -> Joining {
        let key = AppUser(appId: session.appId, userId: session.userId)
        let first = index.add(session)
        let own = BusChannels.user(session.appId, session.userId)
        if first {
            // Heard now means heard all along: a dropped channel takes what was kept of its user with it.
            let heard = await shards.hears([own])
            var restored = false
            if heard { restored = index.restoreDeparted(key) } else { index.forgetDeparted([key]) }
            var joining = Joining(load: restored ? nil : index.beginRelationsLoad(), heard: heard, restored: restored)
            if restored {
                // Asked only now: until the relationships were given back, nobody here may have watched those channels,
                // and a housekeeping pass could have dropped one after an earlier look.
                let others = relatedChannels(of: key)
                joining.settled = others.isEmpty ? true : await shards.hears(others)
            }
            return joining
        }
        // Another session of the user is here: the node knows the relationships, and their channels are watched, so
        // none is dropped meanwhile; one visit to the subscriber asks about them all.
        let confirmed = await shards.heard(among: [own] + relatedChannels(of: key))
        var joining = Joining(load: nil, heard: confirmed.contains(own))
        // The relationships as they stand now (read already: the first session's load may still be running), and one
        // that began since the visit names a channel it did not confirm.
        joining.settled = joining.heard && index.knowsRelations(of: key) && relatedChannels(of: key).allSatisfy(confirmed.contains)
        return joining
    }

    /// The user channels of everyone `key` relates to, as the index holds the relationships now.
    private func relatedChannels(of key: AppUser) -> [String] {
        index.interest(of: key).subtracting([key]).map { BusChannels.user($0.appId, $0.userId) }
    }

    /// The second half of a session's registration, once its connect is admitted: listens to what the session may hear
    /// (its own user channel, its app's slot channels for an app-wide scope, and, for the user's first session here,
    /// the user channels of everyone it relates to) and marks the app's app-wide listeners. The relationships are the
    /// ones the admission read (`relations`), or read here once the user's channel is confirmed. Returns once Redis
    /// confirmed those subscriptions (or gave up: the subscriber keeps trying and reports the gap).
    func settle(_ session: DeviceSession, joining: Joining, relations: Relations?) async {
        let key = AppUser(appId: session.appId, userId: session.userId)
        // An app-wide scope hears others only under premium + statusQuery (SPEC §6 rule 4): otherwise it subscribes
        // to nothing and marks nothing (a config change brings it in line, ``process(_:into:)``).
        var appWide = false
        if session.scope.isAppWide { appWide = (try? await self.apps.find(session.appId))?.config.allowsStatusQuery == true }
        if appWide {
            await markAppWideListeners([session.appId])
            // This node's own writers see the mark at once; other nodes' within their app cache's 500 ms.
            apps.invalidate(session.appId)
        }
        await listen(users: joining.heard ? [] : [key], apps: appWide ? [session.appId] : [])
        guard let load = joining.load else {
            // Relationships kept from the user's last session: their channels, if the hold dropped some meanwhile.
            if joining.restored && !joining.settled { await listen(users: index.interest(of: key).subtracting([key]), apps: []) }
            return
        }
        if let relations, joining.admissionReadsRelations {
            _ = await adopt(key, relations: relations, sequence: load, noting: [])
        } else {
            await loadRelations(key)
        }
    }

    /// Tells writers that these apps have `all`/`roles:` sessions here, for as long as a resume can look back (renewed
    /// by the housekeeping while the sessions last): their setSelfStatus calls then log who changed (``RecentChanges``).
    func markAppWideListeners(_ appIds: [String]) async {
        var marks: [(appId: String, keepMs: Int64)] = []
        for appId in appIds {
            guard let config = try? await self.apps.find(appId)?.config, config.allowsStatusQuery else { continue }
            marks.append((appId, recorder.keepMs(config)))
        }
        do {
            try await recentChanges.markListening(marks)
        } catch {
            logger.warning("could not mark app-wide listeners", metadata: ["error": "\(error)"])
        }
    }

    /// Removes a session from the index. The channels nobody here needs any more stay subscribed for one to two passes
    /// of ``dropUnwatchedChannels()``: a device that reconnects meanwhile (a flaky network, a churning fleet) finds them
    /// still confirmed, so neither its departure nor its return costs a round trip to Redis.
    func unregister(_ session: DeviceSession) {
        index.remove(session)
        mayHaveUnwatchedChannels.store(true, ordering: .relaxed)
    }

    /// The gateway tells of an upgrade that waited `waitedMs` for its turn: one that waited long makes the next pass of
    /// ``dropUnwatchedChannels()`` hold channels longer (``UnwatchedChannelHold``).
    func connectWaited(ms waitedMs: Int64) {
        if waitedMs >= UnwatchedChannelHold.lateConnectMs { connectsRanLate.store(true, ordering: .relaxed) }
    }

    /// Unsubscribes the channels no session here needs any more and needed none at the pass before either, or, while
    /// connects run late, at the passes before up to a bound (``UnwatchedChannelHold``; called by the housekeeping
    /// every third of a lease). Only interest that went away (a session gone, relationships reloaded) can leave a
    /// channel unwatched; without either since the last pass, and nothing held from it, the pass over every channel is
    /// skipped.
    func dropUnwatchedChannels() async {
        let interestWentAway = mayHaveUnwatchedChannels.exchange(false, ordering: .relaxed)
        let connectsLate = connectsRanLate.exchange(false, ordering: .relaxed)
        let hold = unwatchedHold.withLock { $0 }
        guard interestWentAway || hold.isHolding else { return }
        let index = self.index
        let unwatched = Mutex<Set<String>>([])
        await shards.prune { channel in
            let watched: Bool
            switch BusChannels.parse(channel) {
            case .user(let user): watched = index.isWatched(user)
            case .app(let appId): watched = index.hasAppWideSessions(appId)
            case nil: return false
            }
            if watched { return true }
            unwatched.withLock { _ = $0.insert(channel) }
            if hold.keeps(channel, connectsLate: connectsLate) { return true }
            // Not heard from now on: the relationships kept of its user could miss a change.
            if case .user(let user) = BusChannels.parse(channel) { index.forgetDeparted([user]) }
            return false
        }
        let found = unwatched.withLock { $0 }
        unwatchedHold.withLock { _ = $0.pass(unwatched: found, connectsLate: connectsLate) }
    }

    /// Loads a user's relationships into the index; a load that started earlier than one already applied is dropped.
    /// The user channels of relationships that started or ended are subscribed or dropped. `since` (from the
    /// relationship change, ``BusMessage/relationsChanged(appId:userIds:since:)``) lists users the change may have made
    /// the user hear about, with their versions then: once their channels are confirmed, what they changed meanwhile is
    /// delivered (``catchUp(_:since:)``).
    func loadRelations(_ key: AppUser, since: [String: Int64] = [:]) async {
        let sequence = index.beginRelationsLoad()
        let atEdge: [String: Int64]?
        do {
            atEdge = await adopt(key, relations: try await relations.load(key), sequence: sequence, noting: Set(since.keys))
        } catch {
            logger.warning("relations load failed", metadata: ["user": "\(key.userId)", "error": "\(error)"])
            index.forgetDeparted([key])
            // Whatever the change meant for this user is unknown here: reload everything.
            if !since.isEmpty { inbox.markGap() }
            return
        }
        if !since.isEmpty { await catchUp(key, since: since, atEdge: atEdge) }
    }

    /// Applies a read of the user's relationships to the index (unless a later read was applied), and listens to the
    /// user channels it adds (the ones it drops are left to ``dropUnwatchedChannels()``). Answers what
    /// ``FanoutIndex/update(_:relations:sequence:noting:)`` answers.
    private func adopt(_ key: AppUser, relations: Relations, sequence: UInt64, noting targets: Set<String>) async -> [String: Int64]? {
        let before = index.interest(of: key)
        let atEdge = index.update(key, relations: relations, sequence: sequence, noting: targets)
        mayHaveUnwatchedChannels.store(true, ordering: .relaxed)
        let after = index.interest(of: key)
        await listen(users: before.symmetricDifference(after), apps: [])
        return atEdge
    }

    /// Delivers what users that `key` newly hears about changed between the relationship change (their versions in
    /// `since`) and the moment this node heard their channels: published before the confirmation, it reached nobody
    /// here. Waits for the confirmation first (another load may have asked for the channel), then reads the targets'
    /// statuses once. A read that fails is a gap: everything is resynchronised.
    private func catchUp(_ key: AppUser, since: [String: Int64], atEdge: [String: Int64]?) async {
        let targets = index.related(key, among: since.keys)
        guard !targets.isEmpty else { return }
        await listen(users: Set(targets.map { AppUser(appId: key.appId, userId: $0) }), apps: [])
        let statuses: [String: StoredStatus]
        // A target deleted while this reads is left out: what was read may be the deleted user's status.
        let readAt = index.beginCatchUp()
        defer { index.endCatchUp() }
        do {
            guard let config = try await self.apps.find(key.appId)?.config else { return }
            statuses = try await self.statuses.stored(appId: key.appId, userIds: targets)
            var deliveries = DeliveryBatch()
            for stored in statuses.values {
                // `since` holds public versions (what the subscriber was shown), SPEC §10.5.
                guard let from = since[stored.status.userId], stored.record.publicVersion > from else { continue }
                let change = StatusChange(appId: key.appId, stored: stored, publicChange: true)
                let knownAtEdge = atEdge.map { $0[stored.status.userId] ?? .max }
                deliveries.add(change, to: index.catchUpAudience(of: change, config: config, watcher: key, knownAtEdge: knownAtEdge, readAt: readAt))
                metrics.caughtUpStatuses.increment()
            }
            await deliveries.send(through: mailboxes, counting: metrics.eventsDelivered)
        } catch {
            logger.debug("catch-up read failed", metadata: ["error": "\(error)"])
            inbox.markGap()
        }
    }

    /// Brings the subscriptions of these user channels and app slot channels in line with the index.
    private func listen(users: Set<AppUser>, apps: [String]) async {
        do {
            let targets = Dictionary(users.map { (BusChannels.user($0.appId, $0.userId), $0) }, uniquingKeysWith: { first, _ in first })
            let index = self.index
            // A departed user's channel is left to the hold (``dropUnwatchedChannels()``) while their relationships are
            // kept: dropping it here would leave them kept without being heard.
            try await shards.update(Array(targets.keys)) { channel in
                targets[channel].map { index.isWatched($0) || index.holdsDeparted($0) } ?? false
            }
            for appId in apps {
                let allowed = (try await self.apps.find(appId))?.config.allowsStatusQuery == true
                try await shards.update(BusChannels.allAppSlots(appId)) { _ in allowed && index.hasAppWideSessions(appId) }
            }
        } catch {
            logger.warning("bus subscription failed", metadata: ["error": "\(error)"])
        }
    }

    private func process(_ batch: BusInbox.Batch) async {
        if !batch.gap {
            let now = clock.nowMs
            watermark.state.withLock { $0.heard(atMs: now) }
        }
        var deliveries = DeliveryBatch()
        for payload in batch.messages {
            // A status change of an app with no session here concerns nobody on this node: not even decoded.
            if let appId = BusMessage.statusChangeAppId(in: payload), !index.hasSessions(ofApp: appId) { continue }
            // The common status message is read without JSONDecoder (``BusMessage/fastStatusChange(_:)``).
            if let change = payload.withUnsafeBytes(BusMessage.fastStatusChange) {
                await process(.statusChanged(change), into: &deliveries)
                continue
            }
            guard let message = try? JSONCoding.decoder.decode(BusMessage.self, from: Data(payload)) else {
                // Counted, not logged one by one: whoever can publish on the bus must not be able to flood the log.
                metrics.undecodableBusMessages.increment()
                continue
            }
            await process(message, into: &deliveries)
        }
        await deliveries.send(through: mailboxes, counting: metrics.eventsDelivered)
        if batch.gap {
            metrics.busGaps.increment()
            // What was missed may have changed any relationships kept of departed users.
            index.invalidateDeparted()
            if await !resynchronise() {
                // Redis is not back yet: try again shortly (the inbox wakes the loop at once, so wait here). A
                // cancelled node does not retry.
                guard (try? await clock.sleep(for: .milliseconds(250))) != nil else { return }
                inbox.markGap()
            }
        }
    }

    private func process(_ message: BusMessage, into deliveries: inout DeliveryBatch) async {
        switch message {
        case .statusChanged(let change):
            guard let config = try? await self.apps.find(change.appId)?.config else { return }
            deliveries.add(change, to: index.audience(of: change, config: config))
        case .relationsChanged(let appId, let userIds, let since):
            index.forgetDeparted(userIds.map { AppUser(appId: appId, userId: $0) })
            for user in index.localUsers(appId: appId, among: userIds) {
                // Off the delivery path; the load's sequence number keeps an older read from winning.
                if !work.submit({ await self.loadRelations(user, since: since) }) { inbox.markGap() }
            }
        case .devicesClosed(let appId, let userId, let devices, let reason):
            let connections = Set(devices.map(\.connection))
            for session in index.sessions(of: AppUser(appId: appId, userId: userId)) where connections.contains(session.connectionId) {
                session.kick(reason: reason)
            }
        case .masked(let appId, let target, let viewer, let frozen, let role):
            // In order with the target's changes on the same channels: nothing of theirs after this reaches the viewer.
            let config = try? await self.apps.find(appId)?.config
            if let shown = index.applyMask(appId: appId, target: target, viewer: viewer, frozen: frozen, role: role, config: config) {
                deliveries.add(StatusEvent(BlockMask.shown(target, to: viewer, frozen: shown.1)), to: shown.0)
            }
        case .deleted(let appId, let userId):
            let sessions = userId.map { index.sessions(of: AppUser(appId: appId, userId: $0)) } ?? index.sessions(ofApp: appId)
            for session in sessions { session.kick(reason: "deleted") }
            index.forgetDeleted(appId: appId, userId: userId)
            apps.invalidate(appId)
        case .configChanged(let appId):
            apps.invalidate(appId)
            if index.hasAppWideSessions(appId) {
                // The plan or the switch may have moved: app-wide sessions start or stop hearing the app's slots.
                let changed = work.submit {
                    await self.markAppWideListeners([appId])
                    await self.listen(users: [], apps: [appId])
                }
                if !changed { inbox.markGap() }
            }
        }
    }

    /// Reloads every local user's relationships, then re-reads the status of every user watched here (and, for the apps
    /// of `all`/`roles:` sessions here, of every user the app's log names as changed since the feed was last whole) and
    /// delivers those whose version moved. Returns false if Redis could not be read (to be retried).
    private func resynchronise() async -> Bool {
        let now = clock.nowMs
        let resync = watermark.state.withLock { $0.beginResync(atMs: now) }
        let users = index.allLocalUsers()
        // The relationships as they were when the feed was lost (or now, for a gap of another kind): those the reload
        // below no longer finds may be a deletion's. Put back for the next attempt if this one fails.
        let kept = relationsAtLoss.held.withLock { held in
            let kept = held
            held = nil
            return kept
        }
        let before = kept ?? index.relationsSnapshot()
        let done = await resynchronise(resync, users: users, relatedAsIn: before)
        if !done { relationsAtLoss.held.withLock { $0 = before } }
        return done
    }

    /// The steps of ``resynchronise()``.
    private func resynchronise(_ resync: FeedWatermark.Resync, users: [AppUser], relatedAsIn before: FanoutIndex.RelationsSnapshot) async -> Bool {
        index.unpinMasks()
        await withTaskGroup(of: Void.self) { group in
            for (position, user) in users.enumerated() {
                if position >= 32 { await group.next() }
                group.addTask { await self.loadRelations(user) }
            }
        }
        guard await auditDevices(users) else { return false }
        guard await tellOfDeletionsMissed(relatedAsIn: before) else { return false }
        var watched = index.watchedTargets()
        do {
            for (appId, changed) in try await appWideTargets(since: resync.sinceMs - Self.gapLookBackMs) {
                watched[appId] = Array(Set(watched[appId] ?? []).union(changed))
            }
        } catch {
            logger.debug("resynchronisation read of recent changes failed", metadata: ["error": "\(error)"])
            return false
        }
        for (appId, targets) in watched {
            guard let config = try? await self.apps.find(appId)?.config else { continue }
            for chunk in targets.chunks(of: Self.resyncChunk) {
                var statuses: [String: StoredStatus]
                var deleted: [String] = []
                do {
                    statuses = try await self.statuses.stored(appId: appId, userIds: Array(chunk))
                    // Users not found that this node told of: deleted during the gap, their departure lost with it.
                    // They are told as a user created again would start (`unlogined` at the versions the deletion
                    // kept), so that no device keeps showing a deleted user as they last heard.
                    deleted = index.delivered(appId: appId, among: chunk.lazy.filter { statuses[$0] == nil })
                    if !deleted.isEmpty { statuses.merge(try await self.statuses.retired(appId: appId, userIds: deleted)) { read, _ in read } }
                } catch {
                    logger.debug("resynchronisation read failed", metadata: ["error": "\(error)"])
                    return false
                }
                var deliveries = DeliveryBatch()
                for stored in statuses.values {
                    let moved = index.hasMoved(stored, appId: appId)
                    guard moved.any else { continue }
                    if stored.status.version == 0 || deleted.contains(stored.status.userId) {
                        // A deletion this node did not hear (its message came during the gap): forgotten as the message
                        // would have made it, so that this status and the successor's changes are not taken for stale.
                        index.forgetDeleted(appId: appId, userId: stored.status.userId)
                    }
                    let change = StatusChange(appId: appId, stored: stored, publicChange: moved.public)
                    deliveries.add(change, to: index.audience(of: change, config: config))
                    metrics.resyncedStatuses.increment()
                }
                await deliveries.send(through: mailboxes, counting: metrics.eventsDelivered)
            }
        }
        watermark.state.withLock { $0.resynchronised(resync) }
        return true
    }

    /// Tells the subscribers and friends here of a user deleted during the gap (and perhaps created again), whose
    /// departure was lost with the feed, as the departure would have told them: `unlogined` at the versions the
    /// deletion kept (``StatusRepository/retired(appId:userIds:)``), in the view each is shown. The deletion removed every
    /// subscription and friendship to the user, so the relationships just read no longer hold them: the sessions told
    /// are those entitled under the relationships held before the reload (`before`). The deletion publishes what it
    /// kept before it removes them (`status_retire.lua`): a deletion whose removal the reload did not see yet was kept
    /// before this read, or is heard on the bus after this resynchronisation while the relationships still hold. One
    /// `HMGET` per user related here of whom a status was delivered, ``resyncChunk`` to a round trip. Returns false if
    /// Redis could not be read.
    private func tellOfDeletionsMissed(relatedAsIn before: FanoutIndex.RelationsSnapshot) async -> Bool {
        for (appId, targets) in index.relatedDelivered(in: before) {
            guard let config = try? await self.apps.find(appId)?.config else { continue }
            for chunk in targets.chunks(of: Self.resyncChunk) {
                let retired: [String: StoredStatus]
                do {
                    retired = try await self.statuses.retired(appId: appId, userIds: Array(chunk))
                } catch {
                    logger.debug("resynchronisation read of deleted users failed", metadata: ["error": "\(error)"])
                    return false
                }
                var deliveries = DeliveryBatch()
                // A user created again keeps what the deletion kept: one deleted before this node delivered the user
                // created again is older than what it delivered, and left alone. Nothing is forgotten as the deletion's
                // message would have made it: the masks went at the start, and the relationships just read are the
                // user created again's, whose sessions here (beside the deleted user's, which the audit closed) keep
                // them.
                for stored in retired.values where index.deliveredBefore(stored, appId: appId) {
                    let change = StatusChange(appId: appId, stored: stored, publicChange: true)
                    deliveries.add(change, to: index.audience(ofDeletion: change, config: config, relatedAsIn: before))
                    metrics.resyncedStatuses.increment()
                }
                await deliveries.send(through: mailboxes, counting: metrics.eventsDelivered)
            }
        }
        return true
    }

    /// How far before the moment the feed was last known whole a resynchronisation looks in the apps' logs of recent
    /// changes: a change published just before it may still have been on its way, and the log's moments are Redis's
    /// clock, which may differ from the node's by ``ResumePoint/clockMargin``.
    static let gapLookBackMs: Int64 = 1000 + ResumePoint.clockMargin

    /// The users that the app's log of recent changes (``RecentChanges``) names as changed since `since`, for every app
    /// of which a session here has scope `all` or `roles:` and whose plan allows the status query: they may have changed
    /// during the gap, and nothing but the log names them (re-reading every user of the app would cost far more). At
    /// most ``RecentChanges/readLimit`` per app, the latest.
    private func appWideTargets(since: Int64) async throws -> [String: [String]] {
        var targets: [String: [String]] = [:]
        for appId in index.appWideApps() {
            guard let config = try await self.apps.find(appId)?.config, config.allowsStatusQuery else { continue }
            let changed = try await recentChanges.changed(appId: appId, since: since, limit: RecentChanges.readLimit)
            if changed.count >= RecentChanges.readLimit {
                logger.warning("more users changed during a bus gap than one resynchronisation reads", metadata: ["app": "\(appId)"])
            }
            if !changed.isEmpty { targets[appId] = changed }
        }
        return targets
    }

    /// Reads the device record of every session here (one `HMGET` of the user's devices and one `EXISTS` of the
    /// profile per local user, pipelined by ``resyncChunk``) and closes the sessions whose device was removed while the
    /// bus feed was down (``DeviceRecordAudit``). Returns false if Redis could not be read.
    private func auditDevices(_ users: [AppUser]) async -> Bool {
        let now = clock.now
        let mayHaveBeenFiled = lease.state.withLock { $0.mayHaveBeenFiled(at: now) }
        for chunk in users.chunks(of: Self.resyncChunk) {
            let held = chunk.map { user in (user: user, sessions: index.sessions(of: user).filter(\.isConnectedInRedis)) }
                .filter { !$0.sessions.isEmpty }
            let audits: [DeviceRecordStore.Audit]
            do {
                audits = try await deviceRecords.audit(held.map { ($0.user, $0.sessions.map(\.deviceId)) })
            } catch {
                logger.debug("device audit read failed", metadata: ["error": "\(error)"])
                return false
            }
            for (entry, audit) in zip(held, audits) {
                if !audit.userExists {
                    // Deleted while the feed was down: what the deletion's message would have made the node forget.
                    index.forgetDeleted(appId: entry.user.appId, userId: entry.user.userId)
                }
                for (session, record) in zip(entry.sessions, audit.records) {
                    guard
                        let reason = DeviceRecordAudit.kickReason(
                            connection: session.connectionId,
                            record: record,
                            userExists: audit.userExists,
                            mayHaveBeenFiled: mayHaveBeenFiled
                        )
                    else { continue }
                    metrics.auditedDevices.increment()
                    session.kick(reason: reason)
                }
            }
        }
        return true
    }

    /// SPEC §9, on a drain: closes every session with 1012, in equal shares every 100 ms over `duration`, in random
    /// order, then waits (2 s at most) for their departures to be filed. Sessions that joined meanwhile (connects that
    /// were past the gateway's check when the drain began) are closed with the last share.
    func drainSessions(over duration: Duration) async {
        var sessions = index.allSessions().shuffled()
        let step = Duration.milliseconds(100)
        let steps = max(1, Int(duration / step))
        let share = max(1, (sessions.count + steps - 1) / steps)
        logger.notice("draining: closing device sockets (1012)", metadata: ["sessions": "\(sessions.count)", "over": "\(duration)"])
        while !sessions.isEmpty {
            for session in sessions.suffix(share) { session.end(.draining) }
            sessions.removeLast(min(share, sessions.count))
            guard !sessions.isEmpty else { break }
            guard (try? await Task.sleep(for: step)) != nil else { break }
        }
        for session in index.allSessions() { session.end(.draining) }
        await waitForDepartures(within: .seconds(2))
    }

    /// On shutdown: ends every session (their devices go offline) and waits, a few seconds at most, for their
    /// departures to be filed. The bound is the system's time, not the node's clock: it limits how long a stop takes,
    /// and a node stopped under a clock nobody advances must still stop.
    private func closeAllSessions() async {
        for session in index.allSessions() { session.end(.draining) }
        await waitForDepartures(within: .seconds(5))
    }

    /// Waits until every ended session's departure is filed (the index is empty), `bound` at most, on the system's time.
    private func waitForDepartures(within bound: Duration) async {
        let deadline = ContinuousClock.now + bound
        while index.count > 0, ContinuousClock.now < deadline {
            guard (try? await Task.sleep(for: .milliseconds(20))) != nil else { return }
        }
    }
}

/// The relationships a node held when its bus feed was lost (``FanoutService``), shared with the feed's handler.
private final class HeldSnapshot: Sendable {
    let held = Mutex<FanoutIndex.RelationsSnapshot?>(nil)
}
