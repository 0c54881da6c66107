import Foundation
import Logging
import RedisClient
import Testing

@testable import StatusServer

/// The bus's channel layout (docs/bus.md) and how a node keeps its subscriptions in line with its devices.
@Suite(.redis) struct BusChannelsTests {
    @Test func channelNamesParseBackToWhatTheyName() {
        let user = BusChannels.user("app-1", "alice.b@x")
        #expect(user == "st:{app-1:alice.b@x}:bus")
        #expect(BusChannels.parse(user) == .user(AppUser(appId: "app-1", userId: "alice.b@x")))
        // The user channel shares the slot of the user's keys, so the user's scripts may publish on it.
        #expect(RedisKeySlot.of(user) == RedisKeySlot.of(RedisKeys(appId: "app-1").user("alice.b@x").status))
        // The app slot channel of a user is in that user's slot too.
        let appSlot = BusChannels.appSlot("app-1", ofUser: "alice.b@x")
        #expect(RedisKeySlot.of(appSlot) == RedisKeySlot.of(user))
        #expect(BusChannels.parse(appSlot) == .app("app-1"))
        #expect(Set(BusChannels.allAppSlots("app-1").map(RedisKeySlot.of)).count == RedisKeySlot.count)
        for other in ["st:bus", "st:{app-1}:app", "x:{a:b}:bus", "st:{a:b}:busy", ""] {
            #expect(BusChannels.parse(other) == nil, "\(other)")
        }
    }

    /// A user's channel stays subscribed while a device watches the user, and is dropped by the housekeeping once
    /// nobody here does (within a third of a lease): a node does not keep hearing about users it no longer serves.
    @Test func aNodeDropsTheChannelsNobodyWatchesAnyMore() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "bus-channels-test"))
        let shortLease: (inout ServerConfiguration) -> Void = { $0.nodeLeaseSeconds = 3 }
        try await withStatusd(.live, configure: shortLease) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            expectOK(try await app.subscribe("alice", ["bob"]))
            let channels = [BusChannels.user(app.appId, "alice"), BusChannels.user(app.appId, "bob")]
            // One channel per command: on a cluster each is counted by the master of its slot.
            @Sendable func subscribers() async throws -> [Int64] {
                var counts: [Int64] = []
                for channel in channels {
                    counts.append(try await redis.send("PUBSUB", "SHARDNUMSUB", channel).array?.last?.int ?? -1)
                }
                return counts
            }
            let whileConnected = try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "phone")) { _, _ in
                try await subscribers()
            }
            // Confirmed before the welcome: her own channel and the one of the user she subscribes to.
            #expect(whileConnected == [1, 1])
            let deadline = ContinuousClock.now + .seconds(5)
            while try await subscribers() != [0, 0], ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try await subscribers() == [0, 0])
        }
        await redis.close()
    }
}
