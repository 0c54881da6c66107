import NIOEmbedded
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §2 last-seen privacy and SPEC §10.5 views on the delivery path, as pure values: the index splits a change's
/// recipients into the user's own devices, those who see `lastActiveAt` and those who do not, and the batch encodes the
/// change at most once per view.
@Suite struct FanoutAudienceTests {
    private let loop = EmbeddedEventLoop()
    private let premium = premiumAppConfig

    /// bob's own device, dave (bob's friend) and eve (a stranger), both subscribed to bob.
    private func index() -> (FanoutIndex, own: DeviceSession, friend: DeviceSession, stranger: DeviceSession) {
        let index = FanoutIndex()
        let own = DeviceSession(
            appId: "app",
            userId: "bob",
            deviceId: "b",
            platform: .web,
            scope: .subscriptions,
            eventLoop: loop,
            clock: SystemNodeClock()
        )
        let friend = DeviceSession(
            appId: "app",
            userId: "dave",
            deviceId: "d",
            platform: .web,
            scope: .subscriptions,
            eventLoop: loop,
            clock: SystemNodeClock()
        )
        let stranger = DeviceSession(
            appId: "app",
            userId: "eve",
            deviceId: "e",
            platform: .web,
            scope: .subscriptions,
            eventLoop: loop,
            clock: SystemNodeClock()
        )
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

    private func ids(_ sessions: some Sequence<DeviceSession>) -> Set<String> { Set(sessions.map(\.userId)) }

    @Test func everyoneSeesItByDefault() {
        let (index, _, _, _) = index()
        let audience = index.audience(of: change(version: 1, privacy: nil), config: premium)
        #expect(ids(audience.own) == ["bob"])
        #expect(ids(audience.seeing) == ["dave", "eve"])
        #expect(audience.masked.isEmpty)
    }

    @Test func friendsOnlyHidesItFromTheStranger() {
        let (index, _, _, _) = index()
        let audience = index.audience(of: change(version: 1, privacy: .friends), config: premium)
        #expect(ids(audience.own) == ["bob"])
        #expect(ids(audience.seeing) == ["dave"])
        #expect(ids(audience.masked) == ["eve"])
    }

    @Test func nobodyHidesItFromEveryoneButTheUser() {
        let (index, _, _, _) = index()
        let audience = index.audience(of: change(version: 1, privacy: .nobody), config: premium)
        #expect(ids(audience.own) == ["bob"])
        #expect(audience.seeing.isEmpty)
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
        #expect(encodings.count == 3)
        let shown = try #require(encodings.first { $0.recipients.contains { $0 === friend } })
        let masked = try #require(encodings.first { $0.recipients.contains { $0 === stranger } })
        #expect(String(buffer: shown.event.status).contains(#""lastActiveAt":1000"#))
        #expect(!String(buffer: masked.event.status).contains("lastActiveAt"))
        #expect(String(buffer: masked.event.status).contains(#""version":4"#))
        #expect(!String(buffer: masked.event.frame).contains("lastActiveAt"))

        let open = change(version: 5, privacy: .everyone)
        let two = DeliveryBatch.encodings(of: open, for: index.audience(of: open, config: premium))
        #expect(two.count == 2, "the own view and the public view")
        #expect(two.map(\.recipients.count).sorted() == [1, 2])
    }

    /// SPEC §10.5: the own view carries the version, the public view the public version; a change of an invisible
    /// user that leaves the public view as it was is encoded for their own devices only.
    @Test func othersGetThePublicViewAndNothingOfAnInvisibleUsersOwnChanges() throws {
        let (index, own, friend, _) = index()
        var going = change(version: 10, privacy: nil)
        going.status.statusType = .online
        going.status.customStatus = "here"
        going.status.availability = .invisible
        going.publicVersion = 6
        going.hidden = PresenceRecord.Hidden(statusType: .offline, lastActiveAt: 900)
        let encodings = DeliveryBatch.encodings(of: going, for: index.audience(of: going, config: premium))
        let mine = try #require(encodings.first { $0.recipients.contains { $0 === own } })
        let theirs = try #require(encodings.first { $0.recipients.contains { $0 === friend } })
        #expect(String(buffer: mine.event.status).contains(#""availability":"invisible""#))
        #expect(String(buffer: mine.event.status).contains(#""version":10"#))
        #expect(
            String(buffer: theirs.event.status)
                == #"{"lastActiveAt":900,"onlineDevices":[],"statusType":"offline","userId":"bob","version":6}"#
        )
        // An edit while invisible: the public view did not change.
        var edit = going
        edit.status.version = 11
        edit.status.customStatus = "still here"
        edit.publicChange = false
        let quiet = index.audience(of: edit, config: premium)
        #expect(ids(quiet.own) == ["bob"])
        #expect(quiet.seeing.isEmpty && quiet.masked.isEmpty)
        #expect(DeliveryBatch.encodings(of: edit, for: quiet).count == 1)
        // A copy of a public change heard twice (user and app channel) is delivered once.
        var back = going
        back.status.version = 12
        back.status.availability = .available
        back.hidden = nil
        back.publicVersion = 7
        #expect(index.audience(of: back, config: premium).count == 3)
        #expect(index.audience(of: back, config: premium).isEmpty)
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
