import StatusCore
import Testing

@testable import StatusServer

/// ``BlockMask``: a block heard on the bus, applied to the viewer's local user without I/O (SPEC §10.5).
@Suite struct BlockMaskMarkerTests {
    static func watcher(subscribes: Bool = true) -> LocalUser {
        var user = LocalUser()
        if subscribes { user.subscriptions = ["alice"] }
        return user
    }

    @Test func aBlockMasksAtItsFrozenVersionOnce() {
        var user = Self.watcher()
        let first = BlockMask.apply(target: "alice", frozen: 7, to: &user)
        #expect(first == BlockMask.Outcome(changed: true, showAt: 7))
        #expect(user.blocked == ["alice"])
        #expect(user.pinnedMasks == ["alice"])
        // The same marker heard on the app slot channel too shows nothing more.
        let again = BlockMask.apply(target: "alice", frozen: 7, to: &user)
        #expect(again == BlockMask.Outcome(changed: false, showAt: nil))
    }

    @Test func aBlockAlreadyLoadedIsStillShownOnce() {
        var user = Self.watcher()
        user.blocked = ["alice"]
        #expect(BlockMask.apply(target: "alice", frozen: 3, to: &user) == BlockMask.Outcome(changed: true, showAt: 3))
    }

    @Test func theEndOfAMaskUnpinsAndUnblocks() {
        var user = Self.watcher()
        _ = BlockMask.apply(target: "alice", frozen: 7, to: &user)
        #expect(BlockMask.apply(target: "alice", frozen: nil, to: &user) == BlockMask.Outcome(changed: true, showAt: nil))
        #expect(user.blocked.isEmpty && user.pinnedMasks.isEmpty)
        #expect(BlockMask.apply(target: "alice", frozen: nil, to: &user) == BlockMask.Outcome(changed: false, showAt: nil))
    }

    @Test func whoIsShownTheMask() {
        let config = premiumAppConfig
        #expect(BlockMask.hears("alice", role: nil, user: Self.watcher(), scope: .subscriptions, config: config))
        #expect(!BlockMask.hears("alice", role: nil, user: Self.watcher(subscribes: false), scope: .subscriptions, config: config))
        #expect(BlockMask.hears("alice", role: nil, user: Self.watcher(subscribes: false), scope: .all, config: config))
        // A `roles:` scope is told when the role the block began with is one of its roles.
        let stranger = Self.watcher(subscribes: false)
        #expect(BlockMask.hears("alice", role: "crew", user: stranger, scope: .roles(["crew", "ops"]), config: config))
        #expect(!BlockMask.hears("alice", role: "guest", user: stranger, scope: .roles(["crew", "ops"]), config: config))
        #expect(!BlockMask.hears("alice", role: nil, user: stranger, scope: .roles(["crew"]), config: config))
        var basic = config
        basic.plan = .basic
        #expect(!BlockMask.hears("alice", role: nil, user: Self.watcher(), scope: .subscriptions, config: basic))
    }

    @Test func theMaskIsTheOfflineMaskAtTheFrozenVersion() {
        let status = BlockMask.shown("alice", to: "bob", frozen: 9)
        #expect(status == UserStatus(userId: "alice", statusType: .offline, version: 9, onlineDevices: []))
    }

    @Test func aFreezeReadWithTheStatusMasksWhateverTheViewersKeysSay() {
        #expect(PresenceView.of("alice", seenBy: "bob", blocked: .none, isFriend: true, frozen: 4) == .blocked(publicVersionAtBlock: 4))
        let both = BlockedUsers(["alice"], publicVersionsAtBlock: ["alice": 2])
        #expect(PresenceView.of("alice", seenBy: "bob", blocked: both, isFriend: false, frozen: 4) == .blocked(publicVersionAtBlock: 4))
        #expect(PresenceView.of("alice", seenBy: "alice", blocked: .none, isFriend: false, frozen: 4) == .own)
    }
}
