import NIOEmbedded
import StatusCore
import Testing

@testable import StatusServer

/// The relationships kept of a user whose last session left (``DepartedRelations``): given back to their next session
/// only while nothing could have changed them unheard; forgotten on every announcement naming the user, on a load that
/// raced the departure, on a gap and with the app.
@Suite struct DepartedRelationsTests {
    private let loop = EmbeddedEventLoop()
    private let alice = AppUser(appId: "app", userId: "alice")

    private func session(_ userId: String, _ deviceId: String = "d") -> DeviceSession {
        DeviceSession(
            appId: "app",
            userId: userId,
            deviceId: deviceId,
            platform: .web,
            scope: .subscriptions,
            eventLoop: loop,
            clock: SystemNodeClock()
        )
    }

    private func change(_ userId: String, version: Int64) -> StatusChange { .online(userId, version: version) }

    private func entry(_ sequence: UInt64, subscriptions: Set<String> = ["bob"]) -> DepartedRelations.Entry {
        .init(relations: Relations(subscriptions: subscriptions, friends: [], blocked: []), pinnedMasks: [], sequence: sequence)
    }

    @Test func whatIsKeptIsTakenOnce() {
        var kept = DepartedRelations()
        kept.depart(alice, entry(3))
        #expect(kept.holds(alice))
        #expect(kept.take(alice) == entry(3))
        #expect(kept.take(alice) == nil)
        #expect(!kept.holds(alice))
    }

    @Test func aGapDropsEverythingAndDistrustsEveryEarlierRead() {
        var kept = DepartedRelations()
        kept.depart(alice, entry(3))
        kept.invalidate(through: 5)
        #expect(kept.take(alice) == nil)
        // A session that departs after the gap with relationships read before it keeps nothing.
        kept.depart(alice, entry(5))
        #expect(!kept.holds(alice))
        kept.depart(alice, entry(6))
        #expect(kept.take(alice) == entry(6))
    }

    @Test func anAnnouncementOrTheAppsDeletionForgets() {
        var kept = DepartedRelations()
        let bob = AppUser(appId: "app", userId: "bob")
        let other = AppUser(appId: "other", userId: "alice")
        kept.depart(alice, entry(1))
        kept.depart(bob, entry(2))
        kept.depart(other, entry(3))
        kept.forget([bob])
        #expect(kept.holds(alice) && !kept.holds(bob) && kept.holds(other))
        kept.forget(appId: "app")
        #expect(!kept.holds(alice) && kept.holds(other))
    }

    @Test func itIsBounded() {
        var kept = DepartedRelations()
        for i in 0..<DepartedRelations.limit { kept.depart(AppUser(appId: "app", userId: "u\(i)"), entry(1)) }
        #expect(kept.count == DepartedRelations.limit)
        kept.depart(alice, entry(1))
        #expect(kept.count == 1)
    }

    // The index around it.

    @Test func aReconnectHearsItsRelationshipsWithoutALoad() {
        let index = FanoutIndex()
        let first = session("alice")
        index.add(first)
        #expect(index.update(alice, relations: Relations(subscriptions: ["bob"], friends: [], blocked: []), sequence: index.beginRelationsLoad()))
        index.remove(first)
        #expect(index.holdsDeparted(alice))
        #expect(index.audience(of: change("bob", version: 1), config: premiumAppConfig).isEmpty)
        let again = session("alice")
        #expect(index.add(again))
        #expect(index.restoreDeparted(alice))
        #expect(index.audience(of: change("bob", version: 2), config: premiumAppConfig).sessions.map(\.userId) == ["alice"])
        #expect(!index.holdsDeparted(alice))
    }

    @Test func aUserWhoseRelationshipsWereNeverLoadedKeepsNothing() {
        let index = FanoutIndex()
        let first = session("alice")
        index.add(first)
        index.remove(first)
        #expect(!index.holdsDeparted(alice))
    }

    @Test func aLoadFinishingAfterTheDepartureForgetsWhatWasKept() {
        let index = FanoutIndex()
        let first = session("alice")
        index.add(first)
        index.update(alice, relations: Relations(subscriptions: ["bob"], friends: [], blocked: []), sequence: index.beginRelationsLoad())
        // A relationship change is heard while the session is here: its reload starts, the session leaves, the reload
        // ends. What the departure kept predates the change.
        let reload = index.beginRelationsLoad()
        index.remove(first)
        #expect(!index.update(alice, relations: Relations(subscriptions: ["carol"], friends: [], blocked: []), sequence: reload))
        #expect(!index.holdsDeparted(alice))
        index.add(session("alice"))
        #expect(!index.restoreDeparted(alice))
    }

    @Test func aBlockHeardOnEitherSideForgets() {
        let index = FanoutIndex()
        for user in ["alice", "bob"] {
            let device = session(user)
            index.add(device)
            let key = AppUser(appId: "app", userId: user)
            index.update(key, relations: Relations(subscriptions: ["carol"], friends: [], blocked: []), sequence: index.beginRelationsLoad())
            index.remove(device)
        }
        // carol blocks alice: heard as carol's mask for viewer alice (on carol's channel) and alice's for viewer carol.
        _ = index.applyMask(appId: "app", target: "carol", viewer: "alice", frozen: 4, config: premiumAppConfig)
        #expect(!index.holdsDeparted(alice))
        _ = index.applyMask(appId: "app", target: "bob", viewer: "dave", frozen: 4, config: premiumAppConfig)
        #expect(!index.holdsDeparted(AppUser(appId: "app", userId: "bob")))
    }

    @Test func aGapOrADeletionForgets() {
        let index = FanoutIndex()
        let first = session("alice")
        index.add(first)
        index.update(alice, relations: Relations(subscriptions: ["bob"], friends: [], blocked: []), sequence: index.beginRelationsLoad())
        index.remove(first)
        index.invalidateDeparted()
        #expect(!index.holdsDeparted(alice))
        let second = session("alice")
        index.add(second)
        index.update(alice, relations: Relations(subscriptions: ["bob"], friends: [], blocked: []), sequence: index.beginRelationsLoad())
        index.remove(second)
        #expect(index.holdsDeparted(alice))
        index.forgetDelivered(appId: "app", userId: "zed")
        #expect(!index.holdsDeparted(alice))
    }
}
