import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// The twins of the scripts that serve reads, the rate limit and subscriptions.
@Suite struct ReadAndSubscribeScriptTwinTests {
    @Test func queryRateLimit() throws {
        let accepted = try QueryRateLimit.Reply(
            Canned.array([Canned.int(0), Canned.int(7), Canned.int(1), Canned.text("x"), Canned.text("4"), Canned.int(1), Canned.int(0)])
        )
        #expect(accepted.admission == QueryRateLimit.Admission(callsLeft: 7, blocked: ["x"], blockVersions: ["x": 4], friends: [true, false]))
        #expect(throws: StatusReplyError.self) { try QueryRateLimit.Reply(Canned.array([Canned.int(0), Canned.int(7), Canned.int(3)])) }
        #expect(throws: StatusReplyError.self) { try QueryRateLimit.Reply(Canned.array([Canned.int(0)])) }
        #expect(throws: StatusReplyError.self) { try QueryRateLimit.Reply(Canned.array([Canned.int(4), Canned.int(0), Canned.int(0)])) }
        #expect(throws: StatusReplyError.self) { try QueryRateLimit.Reply(Canned.text("0")) }
    }

    @Test func aRefusedCallIsRateLimitedWithItsRetry() {
        expectRateLimited(retryAfterMs: 250) { _ = try QueryRateLimit.Reply(Canned.array([Canned.int(1), Canned.int(250)])) }
        expectRateLimited(retryAfterMs: 1000) { _ = try QueryRateLimit.Reply(Canned.array([Canned.int(1)])) }
        expectRateLimited(retryAfterMs: 40) { _ = try Unsubscribe.Reply(Canned.array([Canned.int(1), Canned.int(40)])) }
    }

    @Test func connectAdmission() throws {
        #expect(try ConnectAdmission.Reply(Canned.int(0)).relations == nil)
        let read = try ConnectAdmission.Reply(
            Canned.array([Canned.array([Canned.text("b"), Canned.text("c")]), Canned.array([]), Canned.array([Canned.text("x")])])
        )
        #expect(read.relations == Relations(subscriptions: ["b", "c"], friends: [], blocked: ["x"]))
        #expect(throws: StatusReplyError.self) { try ConnectAdmission.Reply(Canned.array([Canned.array([]), Canned.array([])])) }
        #expect(throws: StatusReplyError.self) { try ConnectAdmission.Reply(Canned.array([Canned.text("b"), Canned.array([]), Canned.array([])])) }
        #expect(throws: StatusReplyError.self) {
            try ConnectAdmission.Reply(Canned.array([Canned.array([Canned.int(1)]), Canned.array([]), Canned.array([])]))
        }
        expectRateLimited(retryAfterMs: 900) { _ = try ScriptRunner.decode(ConnectAdmission.self, .error("CONNECT_RATE_LIMITED 900")) }
    }

    @Test func connectAdmissionKeysFollowTheHeader() {
        let user = RedisKeys(appId: "app").user("u")
        #expect(ConnectAdmission.Keys(user: user).strings == [user.connectRateLimit, user.subscriptions, user.friends, user.blocks, user.blockedBy])
        #expect(ConnectAdmission.Arguments(limit: .init(calls: 3, windowSeconds: 2), readingRelations: true).strings == ["3", "2000", "1"])
        #expect(ConnectAdmission.Arguments(limit: .init(calls: 3, windowSeconds: 2), readingRelations: false).strings == ["3", "2000", "0"])
    }

    @Test func queryRateLimitKeysFollowTheHeader() {
        let user = RedisKeys(appId: "app").user("u")
        let keys = QueryRateLimit.Keys(user: user, operation: .subscribe).strings
        #expect(keys == [user.rateLimit(.subscribe), user.status, user.blocks, user.blockedBy, user.profile, user.friends, user.blockVersions])
        let arguments = QueryRateLimit.Arguments(rateLimit: RateLimitArguments(.init(calls: 3, windowSeconds: 2)), asked: ["a"])
        #expect(arguments.strings == ["3", "2000", "a"])
    }

    @Test func unsubscribe() throws {
        #expect(try Unsubscribe.Reply(Canned.array([Canned.int(0), Canned.text("a"), Canned.text("b")])).removed == ["a", "b"])
        #expect(try Unsubscribe.Reply(Canned.array([Canned.int(0)])).removed.isEmpty)
        expectMalformed("unsubscribe.lua") { _ = try Unsubscribe.Reply(Canned.array([])) }
        expectMalformed("unsubscribe.lua") { _ = try Unsubscribe.Reply(Canned.array([Canned.int(0), Canned.int(3)])) }
    }

    @Test func subscribe() throws {
        #expect(try Subscribe.Reply(Canned.array([Canned.text("old")])).evicted == ["old"])
        #expect(try Subscribe.Reply(Canned.array([])).evicted.isEmpty)
        expectMalformed("subscribe.lua") { _ = try Subscribe.Reply(Canned.array([Canned.array([])])) }
        expectMalformed("subscribe.lua") { _ = try Subscribe.Reply(Canned.int(0)) }
    }

    @Test func subscribeTargetAndUserActivity() throws {
        #expect(try SubscribeTarget.Reply(Canned.int(1)).value)
        #expect(try !SubscribeTarget.Reply(Canned.int(0)).value)
        #expect(throws: StatusReplyError.self) { try SubscribeTarget.Reply(Canned.int(2)) }
        #expect(throws: StatusReplyError.self) { try SubscribeTarget.Reply(.null) }
        _ = try UserActivity.Reply(Canned.int(0))
        let target = RedisKeys(appId: "app").user("t")
        #expect(SubscribeTarget.Keys(target: target).strings == [target.profile, target.subscribers])
    }

    @Test func statusReadCopy() throws {
        #expect(try StatusReadCopy.Reply(.null).fields == nil)
        let fields = Canned.array(Array(repeating: .null, count: StatusRepository.readFields.count))
        #expect(try StatusReadCopy.Reply(fields).fields == fields)
        expectMalformed("status_read_copy.lua") { _ = try StatusReadCopy.Reply(Canned.array([.null])) }
        expectMalformed("status_read_copy.lua") { _ = try StatusReadCopy.Reply(Canned.int(0)) }
        #expect(StatusReadCopy.Arguments().strings == StatusRepository.readFields)
        // A read for a viewer asks for their freeze too, and the reply has one more value.
        #expect(StatusReadCopy.Arguments(viewer: "bob").strings == StatusRepository.readFields + ["bk:bob"])
        let withFreeze = Canned.array(Array(repeating: .null, count: StatusRepository.readFields.count + 1))
        #expect(try StatusReadCopy.Reply(withFreeze).fields == withFreeze)
    }

    @Test func blockSide() throws {
        let user = RedisKeys(appId: "app").user("alice")
        #expect(BlockSide.Keys(user: user).strings == [user.status, user.blocks, user.blockedBy])
        let arguments = BlockSide.Arguments(mode: .block, half: .me, other: "bob", appId: "app", userId: "alice")
        #expect(arguments.strings == ["block", "me", "bob", "app", "alice"] + BusChannels.statusArguments("app", "alice"))
        #expect(try BlockSide.Reply(Canned.int(12)).value == 12)
        #expect(throws: StatusReplyError.self) { try BlockSide.Reply(Canned.text("x")) }
    }

    @Test func profilePut() throws {
        let reply = try ProfilePut.Reply(Canned.array([Canned.int(1), Canned.text("1700000000000")]))
        #expect(reply.created)
        #expect(reply.createdAt == "1700000000000")
        expectMalformed("profile_put.lua") { _ = try ProfilePut.Reply(Canned.array([Canned.int(1)])) }
        expectMalformed("profile_put.lua") { _ = try ProfilePut.Reply(Canned.array([Canned.int(1), Canned.text("1"), Canned.text("2")])) }
        let arguments = ProfilePut.Arguments(nowMs: 5, generation: "g", fields: [("name", "Ann"), ("role", "admin")])
        #expect(arguments.strings == ["5", "g", "name", "Ann", "role", "admin"])
        let user = RedisKeys(appId: "app").user("ann")
        #expect(try ProfilePut.Keys(user: user).strings == [user.profile, user.status, user.devices, user.retiredVersions])
    }

    @Test func statusRetire() throws {
        #expect(try StatusRetire.Reply(Canned.array([Canned.text("5"), Canned.text("3")])) == .init(version: 5, publicVersion: 3))
        expectMalformed("status_retire.lua") { _ = try StatusRetire.Reply(Canned.array([Canned.text("5")])) }
        expectMalformed("status_retire.lua") { _ = try StatusRetire.Reply(Canned.array([Canned.text("5"), Canned.text("x")])) }
        let user = RedisKeys(appId: "app").user("ann")
        #expect(try StatusRetire.Keys(user: user).strings == [user.status, user.retiredVersions])
        #expect(!user.all.contains(user.retiredVersions))
        let published = BusChannels.statusArguments("app", "ann")
        #expect(try StatusRetire.Arguments(appId: "app", userId: "ann").strings == ["2592000000", "app", "ann"] + published)
    }
}

/// Expects `body` to throw `RATE_LIMITED` with `retryAfterMs`.
func expectRateLimited(retryAfterMs: Int64, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected RATE_LIMITED", sourceLocation: sourceLocation)
    } catch let error as StatusError {
        #expect(error.code == .rateLimited, sourceLocation: sourceLocation)
        #expect(error.retryAfterMs == retryAfterMs, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a StatusError, got \(error)", sourceLocation: sourceLocation)
    }
}
