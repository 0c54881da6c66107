import StatusCore
import Testing

@testable import StatusServer

/// SPEC §7 resume as pure rules: which token is honoured, from when, and which statuses count as moved.
@Suite struct ResumePointTests {
    private func device(connection: String, kind: DeviceRecord.Kind = .webSocket, connectedAt: Int64? = 50_000) -> DeviceRecord {
        DeviceRecord(platform: "web", node: "n", connection: connection, kind: kind, heartbeat: nil, connectedAt: connectedAt)
    }

    @Test func theStoredFormReadsBack() {
        let point = ResumePoint(connection: "6F1C2B0E-3D4A-4E5F-8A9B-0C1D2E3F4A5B", lostAt: 1_763_800_000_123)
        #expect(ResumePoint(stored: point.stored) == point)
        #expect(ResumePoint(stored: "garbage") == nil)
        #expect(ResumePoint(stored: "a b c") == nil)
        #expect(ResumePoint(stored: "a notanumber") == nil)
        let sent = ResumePoint(connection: "c1", lostAt: 5, delivered: [key("alice"): 3, key("b.o-b@x"): 12])
        #expect(ResumePoint(stored: sent.stored) == sent)
        #expect(ResumePoint(stored: "c1 5 alice:x") == nil)
        #expect(ResumePoint(stored: "c1 5 #xyz:3") == nil)
        // A point stored by an earlier version names users by their userId.
        #expect(ResumePoint(stored: "c1 5 alice:3 b.o-b@x:12") == sent)
    }

    /// The audience of the lost session reads back with the point; a point without one is read as before.
    @Test func theAudienceReadsBack() {
        let audience = ResumePoint.Audience(appWide: false, keys: [key("a"), key("b")])
        let listed = ResumePoint(connection: "c1", lostAt: 5, delivered: [key("alice"): 3], audience: audience)
        #expect(ResumePoint(stored: listed.stored) == listed)
        let wide = ResumePoint(connection: "c1", lostAt: 5, audience: .init(appWide: true, keys: []))
        #expect(ResumePoint(stored: wide.stored) == wide)
        #expect(ResumePoint(stored: "c1 5 @ab") == nil)
        #expect(ResumePoint(stored: "c1 5 ~l @zz") == nil)
    }

    /// SPEC §7: a user the device started hearing about while away is news, whatever their version did; one it heard
    /// about is news only if it moved.
    @Test func aUserNewlyHeardIsNewsWhateverTheirVersionDid() {
        var config = AppConfig()
        config.plan = .premium
        config.statusQuery = true
        let facts = [
            Entitlement.Facts(userId: "me", isSelf: true, subscribes: false, isFriend: false, blocked: false),
            Entitlement.Facts(userId: "sub", isSelf: false, subscribes: true, isFriend: false, blocked: false),
            Entitlement.Facts(userId: "friend", isSelf: false, subscribes: false, isFriend: true, blocked: false),
        ]
        let audience = ResumePoint.Audience.of(userId: "me", scope: .subscriptions, facts: facts, blocked: [], config: config)
        // Without friendStatusNotify, a friend is not heard under the `subscriptions` scope.
        #expect(audience.heard("me") && audience.heard("sub") && !audience.heard("friend") && !audience.heard("new"))
        let point = ResumePoint(connection: "c1", lostAt: 100, audience: audience)
        #expect(point.isNews(userId: "new", version: 3, versionTime: 50))
        #expect(point.isNews(userId: "friend", version: 3, versionTime: nil))
        #expect(!point.isNews(userId: "sub", version: 3, versionTime: 50))
        #expect(point.isNews(userId: "sub", version: 4, versionTime: 150))
        // An `all` scope heard everyone but the other side of its blocks.
        let wide = ResumePoint.Audience.of(userId: "me", scope: .all, facts: facts, blocked: ["blocked"], config: config)
        #expect(wide.appWide && wide.heard("anyone") && !wide.heard("blocked"))
        #expect(ResumePoint(connection: "c1", lostAt: 100, audience: wide).isNews(userId: "blocked", version: 1, versionTime: 1))
        // Not recorded: the version's time alone decides.
        #expect(!ResumePoint(connection: "c1", lostAt: 100).isNews(userId: "new", version: 3, versionTime: 50))
    }

    @Test func factsFromRelationshipsAsTheIndexListsThem() {
        let relations = Relations(subscriptions: ["b", "a"], friends: ["a", "c"], blocked: ["c"])
        let facts = Entitlement.facts(of: "me", relations: relations, including: ["d", "a"])
        #expect(facts.map(\.userId) == ["me", "a", "b", "c", "d"])
        #expect(facts[1] == Entitlement.Facts(userId: "a", isSelf: false, subscribes: true, isFriend: true, blocked: false))
        #expect(facts[3].blocked && facts[3].isFriend && !facts[3].subscribes)
    }

    /// The key of a user is the same in every process (a resume may be served by another node): FNV-1a 64.
    @Test func aUsersKeyIsFNV1a() {
        #expect(ResumePoint.userKey("") == 0xcbf2_9ce4_8422_2325)
        #expect(ResumePoint.userKey("a") == 0xaf63_dc4c_8601_ec8c)
        #expect(ResumePoint.userKey("foobar") == 0x8594_4171_f739_67e8)
        #expect(ResumePoint.userKey("alice") != ResumePoint.userKey("alicf"))
    }

    /// SPEC §7: a status is news to a resuming device when it moved since the loss and is not the version its socket
    /// was sent before it closed.
    @Test func aVersionTheSocketWasSentIsNoNews() {
        let point = ResumePoint(connection: "c1", lostAt: 100, delivered: [key("alice"): 3])
        #expect(!point.isNews(userId: "alice", version: 3, versionTime: 150))
        #expect(point.isNews(userId: "alice", version: 4, versionTime: 160))
        #expect(point.isNews(userId: "bob", version: 3, versionTime: 150))
        #expect(!point.isNews(userId: "bob", version: 3, versionTime: 99))
    }

    @Test func theLastDeliveriesAreKeptBoundedAndByUser() {
        var log = RecentDeliveries()
        #expect(log.entries.isEmpty)
        for index in 0..<3 { log.record(user: key("u\(index)"), version: Int64(index), atMs: Int64(index)) }
        #expect(log.entries.map(\.atMs) == [0, 1, 2], "before the ring is full")
        for index in 3..<40 { log.record(user: key("u\(index % 20)"), version: Int64(index), atMs: Int64(index)) }
        #expect(log.entries.count == RecentDeliveries.capacity)
        #expect(log.entries.map(\.atMs) == Array(24..<40), "the last writes, oldest first")
        #expect(log.versions(since: 38) == [key("u18"): 38, key("u19"): 39])
        log.record(user: key("u19"), version: 41, atMs: 41)
        #expect(log.versions(since: 39) == [key("u19"): 41], "a user written twice: the later version")
        #expect(log.entries.count == RecentDeliveries.capacity)
        #expect(log.versions(since: 0)[key("u4")] == nil, "overwritten: the oldest goes first")
        #expect(log.versions(since: 0)[key("u5")] == 25)
    }

    private func key(_ userId: String) -> UInt64 { ResumePoint.userKey(userId) }

    @Test func aTokenResumesFromTheRecordedLossOfItsOwnConnectionOnly() {
        let stored = ResumePoint(connection: "c1", lostAt: 90_000)
        #expect(ResumePoint.since(token: "c1", stored: stored, replaced: nil)?.lostAt == 90_000)
        #expect(ResumePoint.since(token: "c2", stored: stored, replaced: nil) == nil)
        #expect(ResumePoint.since(token: "c1", stored: nil, replaced: nil) == nil, "expired or never recorded")
    }

    @Test func aConnectionNeverFiledResumesFromWhenItWasMade() {
        #expect(ResumePoint.since(token: "c1", stored: nil, replaced: device(connection: "c1"))?.lostAt == 50_000 - ResumePoint.clockMargin)
        #expect(ResumePoint.since(token: "c1", stored: nil, replaced: device(connection: "c0")) == nil)
        #expect(ResumePoint.since(token: "c1", stored: nil, replaced: device(connection: "c1", kind: .backend)) == nil)
        #expect(ResumePoint.since(token: "c1", stored: nil, replaced: device(connection: "c1", connectedAt: nil)) == nil)
        // A recorded loss wins over the record it replaced.
        #expect(
            ResumePoint.since(token: "c1", stored: ResumePoint(connection: "c1", lostAt: 70_000), replaced: device(connection: "c1"))?.lostAt
                == 70_000
        )
    }

    @Test func movedMeansAVersionTimeAtOrAfterTheLoss() {
        #expect(ResumePoint.moved(versionTime: 100, since: 100))
        #expect(ResumePoint.moved(versionTime: 101, since: 100))
        #expect(!ResumePoint.moved(versionTime: 99, since: 100))
        #expect(!ResumePoint.moved(versionTime: nil, since: 100))
    }

    @Test func onlyTokensShapedLikeConnectionIdsAreLookedUp() {
        #expect(ResumePoint.isPlausible(token: "6F1C2B0E-3D4A-4E5F-8A9B-0C1D2E3F4A5B"))
        #expect(!ResumePoint.isPlausible(token: ""))
        #expect(!ResumePoint.isPlausible(token: "a b"))
        #expect(!ResumePoint.isPlausible(token: "a:b"))
        #expect(!ResumePoint.isPlausible(token: "é"))
        #expect(!ResumePoint.isPlausible(token: String(repeating: "a", count: 65)))
        #expect(ResumePoint.isPlausible(token: String(repeating: "a", count: 64)))
    }
}
