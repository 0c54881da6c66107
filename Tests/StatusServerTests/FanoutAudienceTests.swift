import NIOEmbedded
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §2 last-seen privacy on the delivery path, as pure values: the index splits a change's recipients into those
/// who see `lastActiveAt` and those who do not, and the batch encodes the change at most twice.
@Suite struct FanoutAudienceTests {
    private let loop = EmbeddedEventLoop()
    private let premium = premiumAppConfig

    /// bob's own device, dave (bob's friend) and eve (a stranger), both subscribed to bob.
    private func index() -> (FanoutIndex, own: DeviceSession, friend: DeviceSession, stranger: DeviceSession) {
        let index = FanoutIndex()
        let own = DeviceSession(appId: "app", userId: "bob", deviceId: "b", platform: .web, scope: .subscriptions, eventLoop: loop)
        let friend = DeviceSession(appId: "app", userId: "dave", deviceId: "d", platform: .web, scope: .subscriptions, eventLoop: loop)
        let stranger = DeviceSession(appId: "app", userId: "eve", deviceId: "e", platform: .web, scope: .subscriptions, eventLoop: loop)
        for session in [own, friend, stranger] { index.add(session) }
        index.update(
            AppUser(appId: "app", userId: "dave"),
            relations: Relations(subscriptions: ["bob"], friends: ["bob"], blocked: []),
            sequence: index.beginRelationsLoad()
        )
        index.update(
            AppUser(appId: "app", userId: "eve"),
            relations: Relations(subscriptions: ["bob"], friends: [], blocked: []),
            sequence: index.beginRelationsLoad()
        )
        return (index, own, friend, stranger)
    }

    private func change(version: Int64, privacy: LastSeenPrivacy?, lastActiveAt: Int64? = 1000) -> StatusChange {
        let status = UserStatus(userId: "bob", statusType: .offline, lastActiveAt: lastActiveAt, version: version, onlineDevices: [])
        return StatusChange(appId: "app", change: StatusRepository.Change.status.rawValue, role: nil, lastSeenPrivacy: privacy, status: status)
    }

    private func ids(_ sessions: [DeviceSession]) -> Set<String> { Set(sessions.map(\.userId)) }

    @Test func everyoneSeesItByDefault() {
        let (index, _, _, _) = index()
        let audience = index.audience(of: change(version: 1, privacy: nil), config: premium)
        #expect(ids(audience.seeing) == ["bob", "dave", "eve"])
        #expect(audience.masked.isEmpty)
    }

    @Test func friendsOnlyHidesItFromTheStranger() {
        let (index, _, _, _) = index()
        let audience = index.audience(of: change(version: 1, privacy: .friends), config: premium)
        #expect(ids(audience.seeing) == ["bob", "dave"])
        #expect(ids(audience.masked) == ["eve"])
    }

    @Test func nobodyHidesItFromEveryoneButTheUser() {
        let (index, _, _, _) = index()
        let audience = index.audience(of: change(version: 1, privacy: .nobody), config: premium)
        #expect(ids(audience.seeing) == ["bob"])
        #expect(ids(audience.masked) == ["dave", "eve"])
    }

    @Test func theAppDefaultAppliesWhenTheUserSetNothing() {
        let (index, _, _, _) = index()
        var config = premium
        config.lastSeenPrivacy = .nobody
        #expect(ids(index.audience(of: change(version: 1, privacy: nil), config: config).masked) == ["dave", "eve"])
        #expect(index.audience(of: change(version: 2, privacy: .everyone), config: config).masked.isEmpty)
    }

    @Test func aStatusWithoutLastActiveAtNeedsNoSplit() {
        let (index, _, _, _) = index()
        let audience = index.audience(of: change(version: 1, privacy: .nobody, lastActiveAt: nil), config: premium)
        #expect(audience.masked.isEmpty)
        #expect(audience.count == 3)
    }

    @Test func aChangeIsEncodedOncePerGroupAndTheMaskedGroupGetsNoLastActiveAt() throws {
        let (index, _, friend, stranger) = index()
        let hidden = change(version: 4, privacy: .friends)
        let encodings = DeliveryBatch.encodings(of: hidden, for: index.audience(of: hidden, config: premium))
        #expect(encodings.count == 2)
        let shown = try #require(encodings.first { $0.recipients.contains { $0 === friend } })
        let masked = try #require(encodings.first { $0.recipients.contains { $0 === stranger } })
        #expect(String(buffer: shown.event.status).contains(#""lastActiveAt":1000"#))
        #expect(!String(buffer: masked.event.status).contains("lastActiveAt"))
        #expect(String(buffer: masked.event.status).contains(#""version":4"#))
        #expect(!String(buffer: masked.event.frame).contains("lastActiveAt"))

        let open = change(version: 5, privacy: .everyone)
        let one = DeliveryBatch.encodings(of: open, for: index.audience(of: open, config: premium))
        #expect(one.count == 1)
        #expect(one.first?.recipients.count == 3)
    }
}

/// SPEC §6 for one (session, user) pair, as a resuming device's rights are decided.
@Suite struct EntitlementTests {
    private func facts(self isSelf: Bool = false, subscribes: Bool = false, friend: Bool = false, blocked: Bool = false) -> Entitlement.Facts {
        Entitlement.Facts(userId: "x", isSelf: isSelf, subscribes: subscribes, isFriend: friend, blocked: blocked)
    }

    private func config(plan: AppConfig.Plan = .premium, statusQuery: Bool = true, friends: Bool = false, sync: Bool = true) -> AppConfig {
        var config = AppConfig()
        config.plan = plan
        config.statusQuery = statusQuery
        config.friendStatusNotify = friends
        config.multiDeviceSync = sync
        return config
    }

    @Test func ownChangesFollowMultiDeviceSyncOnAnyPlan() {
        #expect(Entitlement.hears(facts(self: true), role: nil, scope: .subscriptions, config: config(plan: .basic)))
        #expect(!Entitlement.hears(facts(self: true), role: nil, scope: .subscriptions, config: config(sync: false)))
    }

    @Test func subscriptionsNeedPremiumAndTheSwitch() {
        #expect(Entitlement.hears(facts(subscribes: true), role: nil, scope: .subscriptions, config: config()))
        #expect(!Entitlement.hears(facts(subscribes: true), role: nil, scope: .subscriptions, config: config(plan: .basic)))
        #expect(!Entitlement.hears(facts(subscribes: true), role: nil, scope: .subscriptions, config: config(statusQuery: false)))
    }

    @Test func friendsHearThroughFriendStatusNotifyOrTheFriendsScope() {
        #expect(!Entitlement.hears(facts(friend: true), role: nil, scope: .subscriptions, config: config()))
        #expect(Entitlement.hears(facts(friend: true), role: nil, scope: .subscriptions, config: config(statusQuery: false, friends: true)))
        #expect(Entitlement.hears(facts(friend: true), role: nil, scope: .friends, config: config()))
        #expect(!Entitlement.hears(facts(friend: true), role: nil, scope: .friends, config: config(statusQuery: false)))
    }

    @Test func scopesAllAndRoles() {
        #expect(Entitlement.hears(facts(), role: nil, scope: .all, config: config()))
        #expect(Entitlement.hears(facts(), role: "admin", scope: .roles(["admin"]), config: config()))
        #expect(!Entitlement.hears(facts(), role: "guest", scope: .roles(["admin"]), config: config()))
        #expect(!Entitlement.hears(facts(), role: nil, scope: .roles(["admin"]), config: config()))
    }

    @Test func aBlockSilencesEverythingButOneself() {
        #expect(!Entitlement.hears(facts(subscribes: true, friend: true, blocked: true), role: nil, scope: .all, config: config(friends: true)))
    }
}
