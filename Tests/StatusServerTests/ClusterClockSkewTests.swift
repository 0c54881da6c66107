import Foundation
import RedisClient
import RedisTestSupport
import Testing

@testable import StatusServer

/// SPEC §7 on a Redis Cluster whose hosts' clocks do not agree. Every script call carries its deadline on Redis's
/// clock (``WriteFence``); the masters of a cluster each read their own, so the node fences each call on the clock of
/// the master that runs it. Fenced on another master's clock, every call to a master whose clock runs ahead by more than
/// the command timeout would arrive "late" and be refused, and a master whose clock runs behind would take calls later
/// than their callers gave up on them.
@Suite("statusd on a cluster whose masters' clocks disagree", .redis, .serialized, .timeLimit(.minutes(2)))
struct ClusterClockSkewTests {
    @Test func aMasterWhoseClockRunsAheadServesItsUsers() async throws {
        // The third master's clock runs 3 s ahead: twice the command timeout (1.5 s), a call's budget.
        try await withTestCluster(masters: 3, clockShifts: [2: .seconds(3)]) { cluster in
            let redis = try RedisConfiguration(url: cluster.url)
            let onTheCluster: (inout ServerConfiguration) -> Void = { configuration in
                configuration.redis = redis
                configuration.nodeLeaseSeconds = 3
            }
            try await withStatusd(.live, configure: onTheCluster) { api in
                let app = try await api.createApp(config: premiumConfig)
                let users = (0..<24).map { "u\($0)" }
                try await app.createUsers(users)
                let ahead = cluster.nodes[2].port
                let owners = try cluster.slotOwners()
                let onAhead = try users.filter { user in
                    let key = RedisKeys(appId: app.appId).user(user).status
                    let slot = Int(try cluster.cli(["-p", "\(ahead)", "CLUSTER", "KEYSLOT", key]).trimmingCharacters(in: .whitespacesAndNewlines))
                    return slot.flatMap { owners[$0] } == ahead
                }
                #expect(!onAhead.isEmpty, "no user on the master whose clock runs ahead")
                // Writes to every user for 4 s, over several readings of the clocks (each third of the 3 s lease):
                // every one is applied, wherever its user lives.
                let until = ContinuousClock.now + .seconds(4)
                var round = 0
                var refused: [String] = []
                while ContinuousClock.now < until {
                    round += 1
                    for user in users {
                        let answer = try await app.call(.put, "/users/\(user)/status", ["customStatus": .string("\(user)-\(round)")])
                        if answer.status != 200 { refused.append("\(user) round \(round): \(answer.status) \(answer.body)") }
                    }
                }
                #expect(refused.isEmpty, "refused: \(refused.prefix(5)) (\(refused.count) of \(round * users.count))")
                let stored = try await app.call(.post, "/status/query", ["userIds": .array(users.map { .string($0) })])
                for status in stored.body["statuses"].array {
                    let user = status["userId"].string ?? ""
                    #expect(status["customStatus"].string == "\(user)-\(round)")
                }
            }
        }
    }
}
