import NIOEmbedded
import StatusCore
import Testing

@testable import StatusServer

/// The fan-out index and the bus inbox as pure values: relationship loads applied in the order they started, the
/// versions that decide what a resynchronisation delivers, a gap flag that survives an overflow.
@Suite struct FanoutIndexTests {
    private let loop = EmbeddedEventLoop()
    private let premium = premiumAppConfig

    private func session(_ userId: String, scope: PresenceScope = .subscriptions) -> DeviceSession {
        DeviceSession(
            appId: "app",
            userId: userId,
            deviceId: "d-\(userId)",
            platform: .web,
            scope: scope,
            eventLoop: loop,
            clock: SystemNodeClock()
        )
    }

    private func change(_ userId: String, version: Int64) -> StatusChange { .online(userId, version: version) }

    @Test func anAppHasSessionsUntilItsLastOneLeaves() {
        let index = FanoutIndex()
        let first = session("a")
        let second = DeviceSession(
            appId: "app",
            userId: "a",
            deviceId: "d2",
            platform: .ios,
            scope: .subscriptions,
            eventLoop: loop,
            clock: SystemNodeClock()
        )
        #expect(!index.hasSessions(ofApp: "app"))
        index.add(first)
        index.add(second)
        #expect(index.hasSessions(ofApp: "app"))
        #expect(!index.hasSessions(ofApp: "other"))
        index.remove(first)
        index.remove(first)
        #expect(index.hasSessions(ofApp: "app"))
        index.remove(second)
        #expect(!index.hasSessions(ofApp: "app"))
    }

    @Test func anOlderRelationshipLoadFinishingLaterDoesNotWin() {
        let index = FanoutIndex()
        let watcher = session("watcher")
        index.add(watcher)
        let key = AppUser(appId: "app", userId: "watcher")
        let first = index.beginRelationsLoad()
        let second = index.beginRelationsLoad()
        #expect(index.update(key, relations: Relations(subscriptions: ["bob"], friends: [], blocked: []), sequence: second))
        // The earlier read (made before bob was subscribed) comes back last: ignored.
        #expect(!index.update(key, relations: Relations(subscriptions: [], friends: [], blocked: []), sequence: first))
        #expect(index.audience(of: change("bob", version: 1), config: premium).sessions.map(\.userId) == ["watcher"])
    }

    /// A user deleted while their sessions here are still closing (the kick takes its time), and created again under the
    /// id, who connects meanwhile: the new session is the first of a new user. The deleted user's relationships went
    /// with the deletion (nobody hears carol through them), a load read before it is ignored, and the new user's own
    /// load applies.
    @Test func aUserCreatedAgainWhileTheDeletedOnesSessionsCloseHasTheirRelationshipsReadAnew() {
        let index = FanoutIndex()
        let old = session("alice")
        #expect(index.add(old))
        let key = AppUser(appId: "app", userId: "alice")
        let friends = Relations(subscriptions: [], friends: ["carol"], blocked: [])
        #expect(index.update(key, relations: friends, sequence: index.beginRelationsLoad()))
        let readBefore = index.beginRelationsLoad()
        index.forgetDeleted(appId: "app", userId: "alice")
        #expect(index.audience(of: change("carol", version: 1), config: premium).sessions.isEmpty)
        let successor = DeviceSession(
            appId: "app",
            userId: "alice",
            deviceId: "d2",
            platform: .ios,
            scope: .friends,
            eventLoop: loop,
            clock: SystemNodeClock()
        )
        #expect(index.add(successor), "the first session of a new user: its relationships are read")
        #expect(!index.update(key, relations: friends, sequence: readBefore), "read before the deletion")
        #expect(index.watched(by: successor).allSatisfy { $0.userId != "carol" })
        let anew = index.beginRelationsLoad()
        #expect(index.update(key, relations: Relations(subscriptions: ["dave"], friends: [], blocked: []), sequence: anew))
        #expect(index.audience(of: change("dave", version: 1), config: premium).sessions.map(\.deviceId).contains("d2"))
        let another = DeviceSession(
            appId: "app",
            userId: "alice",
            deviceId: "d3",
            platform: .ios,
            scope: .friends,
            eventLoop: loop,
            clock: SystemNodeClock()
        )
        #expect(!index.add(another), "the new user's second session")
    }

    /// A deleted user's blocks go with them: the deletion heard on the bus unpins the mask and unblocks, even when the
    /// viewer's relationship reload (told on another channel) ran first and kept the pin; a user created again under
    /// the id is heard again.
    @Test func aDeletionHeardAfterTheReloadStillUnblocks() {
        let index = FanoutIndex()
        let viewer = session("viewer")
        index.add(viewer)
        let key = AppUser(appId: "app", userId: "viewer")
        index.update(key, relations: Relations(subscriptions: ["bob"], friends: [], blocked: []), sequence: index.beginRelationsLoad())
        #expect(index.applyMask(appId: "app", target: "bob", viewer: "viewer", frozen: 3, config: premium) != nil)
        #expect(index.blocked(by: viewer) == ["bob"])
        // bob is deleted: the viewer's reload reads no block, but the pin holds until the deletion is heard.
        index.update(key, relations: Relations(subscriptions: ["bob"], friends: [], blocked: []), sequence: index.beginRelationsLoad())
        #expect(index.blocked(by: viewer) == ["bob"])
        #expect(index.audience(of: change("bob", version: 1), config: premium).isEmpty)
        index.unpinMasks(appId: "app", target: "bob")
        #expect(index.blocked(by: viewer).isEmpty)
        #expect(index.audience(of: change("bob", version: 2), config: premium).sessions.map(\.userId) == ["viewer"])
    }

    /// A deleted user's sessions close after the deletion is heard (the kick takes a moment): the relationships the node
    /// read of them must not be kept when they leave, and given to a user created again under the id.
    @Test func aDeletedUsersRelationshipsAreNotKeptWhenTheirSessionsLeave() {
        let index = FanoutIndex()
        let old = session("bob")
        index.add(old)
        let key = AppUser(appId: "app", userId: "bob")
        index.update(key, relations: Relations(subscriptions: [], friends: [], blocked: ["carol"]), sequence: index.beginRelationsLoad())
        index.forgetDelivered(appId: "app", userId: "bob")
        index.remove(old)
        index.add(session("bob"))
        #expect(!index.restoreDeparted(key), "the successor's relationships are read, not restored")
    }

    /// The recipients kept for a user who changes again and again follow every change to the sessions, the
    /// relationships and the app's config: a kept answer is never stale.
    @Test func keptRecipientsFollowSessionsRelationshipsAndConfig() {
        let index = FanoutIndex()
        var version: Int64 = 0
        func heard(_ config: AppConfig = premiumAppConfig) -> [String] {
            version += 1
            return index.audience(of: change("bob", version: version), config: config).sessions.map(\.userId).sorted()
        }
        func relate(_ userId: String, subscriptions: Set<String>, blocked: Set<String> = []) {
            let key = AppUser(appId: "app", userId: userId)
            index.update(key, relations: Relations(subscriptions: subscriptions, friends: [], blocked: blocked), sequence: index.beginRelationsLoad())
        }
        index.add(session("watcher"))
        relate("watcher", subscriptions: ["bob"])
        #expect(heard() == ["watcher"])
        #expect(heard() == ["watcher"])
        // Another watcher arrives and subscribes.
        let carol = session("carol")
        index.add(carol)
        #expect(heard() == ["watcher"])
        relate("carol", subscriptions: ["bob"])
        #expect(heard() == ["carol", "watcher"])
        // A block, then its end.
        relate("watcher", subscriptions: ["bob"], blocked: ["bob"])
        #expect(heard() == ["carol"])
        relate("watcher", subscriptions: ["bob"])
        #expect(heard() == ["carol", "watcher"])
        // A session leaves.
        index.remove(carol)
        #expect(heard() == ["watcher"])
        // The app's config: a basic plan tells nobody else; multiDeviceSync decides whether bob's own devices hear.
        var basic = premiumAppConfig
        basic.plan = .basic
        #expect(heard(basic) == [])
        index.add(session("bob"))
        #expect(heard() == ["bob", "watcher"])
        var unsynced = premiumAppConfig
        unsynced.multiDeviceSync = false
        #expect(heard(unsynced) == ["watcher"])
        // An unsubscribe.
        relate("watcher", subscriptions: [])
        #expect(heard() == ["bob"])
    }

    /// An index with one local session, of `watcher`, who subscribed to bob.
    private func watcherOfBob() -> FanoutIndex {
        let index = FanoutIndex()
        index.add(session("watcher"))
        index.update(
            AppUser(appId: "app", userId: "watcher"),
            relations: Relations(subscriptions: ["bob"], friends: [], blocked: []),
            sequence: index.beginRelationsLoad()
        )
        return index
    }

    @Test func resynchronisationDeliversOnlyMovedVersionsAndStaleChangesAreDropped() {
        let index = watcherOfBob()
        #expect(index.watchedTargets()["app"].map(Set.init) == ["watcher", "bob"])
        let bob3 = StoredStatus(record: change("bob", version: 3).record)
        #expect(index.hasMoved(bob3, appId: "app").any, "nothing delivered yet: a resynchronisation sends it")
        #expect(index.audience(of: change("bob", version: 3), config: premium).sessions.count == 1)
        #expect(!index.hasMoved(bob3, appId: "app").any)
        // Version 2 arriving late on the bus is stale.
        #expect(index.audience(of: change("bob", version: 2), config: premium).sessions.isEmpty)
    }

    /// A user who never logged in (version 0) never changed: a resynchronisation that reads them has nothing to tell,
    /// even of a user nothing was delivered of yet. Read just before their first connect, the status would otherwise
    /// reach the watchers after that connect's change, as if the user had gone back to never logged in.
    @Test func aStatusThatNeverChangedHasNotMoved() {
        let index = watcherOfBob()
        #expect(!index.hasMoved(StoredStatus(record: change("bob", version: 0).record), appId: "app").any)
        #expect(index.hasMoved(StoredStatus(record: change("bob", version: 1).record), appId: "app").any)
    }

    /// A user deleted with their app while the node's feed was down is read at version 0 by the resynchronisation (the
    /// app created again starts its users anew), where the node had delivered a later version: that is news (the
    /// deletion). The resynchronisation then forgets what was delivered of the user, as the deletion's message would
    /// have, and tells it; the successor's first change is not dropped as older than the deleted user's last one.
    @Test func aDeletionUnheardDuringAGapHasMoved() {
        let index = watcherOfBob()
        #expect(index.audience(of: change("bob", version: 5), config: premium).sessions.map(\.userId) == ["watcher"])
        let deleted = StoredStatus(record: change("bob", version: 0).record)
        #expect(index.hasMoved(deleted, appId: "app").any)
        index.forgetDelivered(appId: "app", userId: "bob")
        #expect(index.audience(of: change("bob", version: 0), config: premium).sessions.map(\.userId) == ["watcher"])
        #expect(index.audience(of: change("bob", version: 1), config: premium).sessions.map(\.userId) == ["watcher"])
    }

    /// SPEC §6: a change never goes to a user on either side of a block. An `all` session is in the index from its
    /// join, before its user's relationships are read: until then nobody's change reaches it, since whom it blocks is
    /// not known (PresenceModelTests found one told of a user it blocks, seeds 8979 and 992742).
    @Test func anAppWideSessionHearsOthersOnceItsBlocksAreKnown() {
        let index = FanoutIndex()
        index.add(session("watcher", scope: .all))
        #expect(index.audience(of: change("alice", version: 1), config: premium).isEmpty, "relationships not read yet")
        let key = AppUser(appId: "app", userId: "watcher")
        index.update(key, relations: Relations(subscriptions: [], friends: [], blocked: ["alice"]), sequence: index.beginRelationsLoad())
        #expect(index.audience(of: change("alice", version: 2), config: premium).isEmpty, "blocked")
        #expect(index.audience(of: change("bob", version: 1), config: premium).sessions.map(\.userId) == ["watcher"])
    }

    /// A user heard only through an app-wide scope is watched by no relationship, yet each change of theirs comes twice
    /// (their user channel and their app's slot channel). A prune pass between the two copies (a gap splits them into
    /// two batches) keeps the version delivered since the pass before: the second copy is still a repeat. Two passes
    /// later, with nothing delivered, it is forgotten.
    @Test func aPruneBetweenTheTwoCopiesOfAChangeKeepsItARepeat() {
        let index = FanoutIndex()
        index.add(session("watcher", scope: .all))
        let none = Relations(subscriptions: [], friends: [], blocked: [])
        index.update(AppUser(appId: "app", userId: "watcher"), relations: none, sequence: index.beginRelationsLoad())
        #expect(index.watchedTargets()["app"] == ["watcher"], "alice is watched by no relationship")
        #expect(index.audience(of: change("alice", version: 1), config: premium).sessions.map(\.userId) == ["watcher"])
        index.pruneVersions()
        #expect(index.audience(of: change("alice", version: 1), config: premium).isEmpty, "the second copy, after a pass")
        #expect(!index.hasMoved(StoredStatus(record: change("alice", version: 1).record), appId: "app").any)
        index.pruneVersions()
        #expect(index.hasMoved(StoredStatus(record: change("alice", version: 1).record), appId: "app").any, "forgotten")
    }

    /// A catch-up that read bob before his deletion and delivers after it was heard: the deleted bob's status reaches
    /// nobody and leaves no version behind, so a bob created again under the id from version 0 (with a new app) is
    /// heard from his first change. Another target read by the same catch-up is still caught up.
    @Test func aCatchUpReadBeforeADeletionLeavesNoVersionOfTheDeletedUser() {
        let index = FanoutIndex()
        index.add(session("watcher"))
        let watcher = AppUser(appId: "app", userId: "watcher")
        index.update(watcher, relations: Relations(subscriptions: ["bob", "carol"], friends: [], blocked: []), sequence: index.beginRelationsLoad())
        let readAt = index.beginCatchUp()
        // Read: bob at version 5, carol at 2. Then bob is deleted, and the deletion is heard first.
        index.forgetDelivered(appId: "app", userId: "bob")
        let oldBob = index.catchUpAudience(of: change("bob", version: 5), config: premium, watcher: watcher, readAt: readAt)
        #expect(oldBob.isEmpty, "the deleted user's status read before the deletion")
        let carol = index.catchUpAudience(of: change("carol", version: 2), config: premium, watcher: watcher, readAt: readAt)
        #expect(carol.sessions.map(\.userId) == ["watcher"])
        index.endCatchUp()
        #expect(index.audience(of: change("bob", version: 1), config: premium).sessions.map(\.userId) == ["watcher"])
        // A catch-up begun after the deletion delivers as usual.
        let later = index.beginCatchUp()
        #expect(!index.catchUpAudience(of: change("bob", version: 2), config: premium, watcher: watcher, readAt: later).isEmpty)
        index.endCatchUp()
    }

    @Test func anOverflowingInboxKeepsItsGapFlag() async {
        let metrics = NodeMetrics()
        let inbox = BusInbox(limit: 2, dropped: metrics.busEventsDropped)
        for message in 0..<5 { inbox.push([UInt8(message)]) }
        #expect(metrics.registry.emitToString().contains("statusd_bus_events_dropped_total 3"))
        let batch = await inbox.next()
        #expect(batch?.messages == [[0], [1]])
        #expect(batch?.gap == true)
        inbox.markGap()
        #expect(await inbox.next()?.gap == true)
        inbox.finish()
        #expect(await inbox.next() == nil)
    }
}
