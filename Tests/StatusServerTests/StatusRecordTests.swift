import Foundation
import RedisClient
import Testing

@testable import StatusServer

/// `lib.lua`'s status record on its own: `status_put` keeps the record as the hash will be and `status_flush` leaves the
/// hash as the last change of each field says, whatever the order of sets and deletes; a change that leaves a field as
/// it is writes nothing. Each case runs `lib.lua` with a few lines after it on a hash of its own, as a script would.
@Suite(.redis) struct StatusRecordTests {
    @Test func theLastChangeOfEachFieldIsWhatTheHashHolds() async throws {
        let after = try await run(
            ["t": "online", "cs": "lunch", "la": "1"],
            """
            local s = open_status(KEYS[1])
            status_put(s, 'gd', '1')
            status_put(s, 'gd', nil)
            status_put(s, 'gd', '2')
            status_put(s, 'hu', nil)
            status_put(s, 'hu', nil)
            status_put(s, 'hu', '5')
            status_put(s, 'la', '2', LA)
            status_put(s, 'la', '3', LA)
            status_put(s, 'cs', nil, CS)
            status_put(s, 'cs', 'back', CS)
            status_put(s, 't', nil, T)
            status_put(s, 'gu', '7')
            status_put(s, 'gu', nil)
            status_flush(s)
            return 0
            """
        )
        #expect(after.hash == ["gd": "2", "hu": "5", "la": "3", "cs": "back"])
    }

    @Test func theRecordIsTheHashAsItWillBe() async throws {
        let after = try await run(
            ["t": "online", "cs": "lunch", "v": "4"],
            """
            local s = open_status(KEYS[1])
            status_put(s, 'cs', nil, CS)
            status_put(s, 'av', 'busy', AV)
            status_bump(s, '99')
            local seen = { s[CS] or '', s[AV], s[V] }
            status_flush(s)
            return seen
            """
        )
        #expect(after.reply == ["", "busy", "5"])
        #expect(after.hash == ["t": "online", "av": "busy", "v": "5", "vt": "99"])
    }

    @Test func aChangeThatLeavesAFieldAsItIsWritesNothing() async throws {
        let after = try await run(
            ["t": "online", "la": "1"],
            """
            local s = open_status(KEYS[1])
            status_put(s, 't', 'online', T)
            status_put(s, 'la', '1', LA)
            status_put(s, 'cs', nil, CS)
            local pending = { #s[15] - 2, #s[16] - 2 }
            status_flush(s)
            return pending
            """
        )
        #expect(after.reply == ["0", "0"])
        #expect(after.hash == ["t": "online", "la": "1"])
    }

    /// Runs `lib.lua` and `body` with KEYS[1] a status hash holding `fields`; returns the script's reply (as strings)
    /// and the hash after.
    private func run(_ fields: [String: String], _ body: String) async throws -> (reply: [String], hash: [String: String]) {
        let prelude = try #require(EmbeddedResources.text("Scripts/lib.lua"))
        return try await withRunningClient(try TestRedis.configuration, "status-record") { redis in
            let key = "status-record-\(UUID().uuidString)"
            _ = try await redis.send(["HSET", key] + fields.flatMap { [$0.key, $0.value] })
            // The prelude takes the call's deadline off ARGV first: 0, none.
            let reply = try await redis.send("EVAL", prelude + "\n" + body, "1", key, "0")
            let values = (reply.array ?? [reply]).map { $0.string ?? $0.int.map { String($0) } ?? "" }
            let stored = try await redis.send("HGETALL", key).array ?? []
            var hash: [String: String] = [:]
            for pair in stride(from: 0, to: stored.count - 1, by: 2) {
                hash[stored[pair].string ?? ""] = stored[pair + 1].string ?? ""
            }
            _ = try await redis.send("DEL", key)
            return (values, hash)
        }
    }
}
