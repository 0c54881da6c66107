import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.7 (the work of a node grows with what is asked of it, not with the tenants; §10.2 "within 1 s" must hold for
/// every app): the sweeps of custom status expiries and offline graces visit only the apps with something due. 2,000
/// apps each had an expiry, cleared since; one of them then has one due: a pass of the sweeps costs Redis a handful of
/// commands, not one per app. Counted by Redis itself (`INFO commandstats`) on a redis-server of the test's own, with
/// the node's housekeeping held until the test steps its clock.
@Suite(.redis) struct DueSweepCostTests {
    static let apps = 2_000

    @Test func aSweepVisitsOnlyTheAppsWithSomethingDue() async throws {
        try await withHeldNode { api, server, clock in
            let redis = RedisClient(configuration: server.configuration, logger: Logger(label: "due-sweep-cost"))
            try await closing(redis) {
                // Every app sets a custom status that clears itself after a second, 16 apps at a time.
                var apps: [APIClient] = []
                try await withThrowingTaskGroup(of: APIClient.self) { group in
                    for index in 0..<Self.apps {
                        if index >= 16, let made = try await group.next() { apps.append(made) }
                        group.addTask {
                            let app = try await api.createApp()
                            try await app.createUsers(["u"])
                            expectOK(try await app.call(.put, "/users/u/status", ["customStatus": "x", "clearAfterSeconds": 1]))
                            return app
                        }
                    }
                    for try await made in group { apps.append(made) }
                }
                #expect(apps.count == Self.apps)
                // Once due, the held node's sweeps clear them all (bounded generously: this test counts commands, and the
                // suite's other tests share the machine).
                try await Task.sleep(for: .milliseconds(1100))
                let deadline = ContinuousClock.now + .seconds(90)
                while try await Self.pending(redis) > 0, ContinuousClock.now < deadline {
                    // Never ahead of the wall time: a due time the node writes is read on Redis's clock.
                    if clock.nowMs + 250 <= Self.wallMs {
                        try await clock.step(by: .milliseconds(250))
                    } else {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                }
                #expect(try await Self.pending(redis) == 0, "expiries left after the sweeps")
                for app in [apps[0], apps[Self.apps - 1]] { #expect(!(try await app.ownStatus("u")).has("customStatus")) }

                // One app has one due. The held clock first catches up with the wall time (its due time is the node's).
                try await clock.step(by: .milliseconds(max(Self.wallMs - clock.nowMs, 0)))
                let due = apps[Self.apps / 2]
                expectOK(try await due.call(.put, "/users/u/status", ["customStatus": "y", "clearAfterSeconds": 1]))
                try await Task.sleep(for: .milliseconds(1100))
                let before = try await RefusalCostTests.commandCounts(redis)
                try await clock.step(by: .milliseconds(1250))
                let after = try await RefusalCostTests.commandCounts(redis)
                #expect(!(try await due.ownStatus("u")).has("customStatus"), "the due expiry was not cleared")
                var work: [String: Int] = [:]
                for (command, count) in after where count > before[command, default: 0] {
                    work[command] = count - before[command, default: 0]
                }
                let total = work.values.reduce(0, +)
                // Five ticks of the housekeeping (both sweeps, the lease, the other sweeps) and the one clearing: a few
                // dozen commands. One per app would be thousands.
                print("DueSweepCostTests: \(Self.apps) apps, one due, five ticks: \(total) commands \(work.sorted { $0.key < $1.key })")
                #expect(total < 300, "a pass over \(Self.apps) apps with one due ran \(total) commands: \(work)")
            }
        }
    }

    private static var wallMs: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// How many apps still hold an expiry entry (an index goes with its last entry).
    private static func pending(_ redis: RedisClient) async throws -> Int {
        try await redis.send("KEYS", "st:*:expiries").array?.count ?? 0
    }
}
