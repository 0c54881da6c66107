import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §6 and §10.6 with the connect's single round trip: a device whose user has no session on the node, but whose
/// user channel the node still hears (a reconnect), gets its relationships from the connect's admission. What changed
/// in them while it was away decides what it hears: a subscription made meanwhile is heard, a dropped one is not, and
/// a block made meanwhile keeps the blocker's changes from it.
@Suite(.redis) struct ConnectAdmissionReadTests {
    @Test func aReconnectHearsByTheRelationshipsItsAdmissionRead() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true])
            try await app.createUsers(["watcher", "alice", "bob", "carol"])
            expectOK(try await app.subscribe("watcher", ["bob", "carol"]))
            let port = try #require(api.client.port)
            try await withRunningClient(try TestRedis.configuration, "probe") { redis in
                let ownChannel = BusChannels.user(app.appId, "watcher")
                // The first connect: the node does not hear the user's channel yet, and reads the relationships after
                // subscribing to it.
                try await app.withDevice(port: port, userId: "watcher", DeviceOptions(deviceId: "w1")) { watcher, _ in
                    _ = try await app.setStatus("bob", "before")
                    #expect(try await watcher.nextStatus(of: "bob")["customStatus"] == "before")
                }
                // Away: one subscription dropped, one made, and carol blocks the watcher.
                expectOK(try await app.call(.delete, "/users/watcher/subscriptions", ["userIds": ["bob"]]))
                expectOK(try await app.subscribe("watcher", ["alice"]))
                expectOK(try await app.call(.put, "/users/carol/blocks", ["userIds": ["watcher"]]))
                // The node still hears the watcher's channel (its unwatched channels are dropped a third of a lease
                // later): the reconnect's admission reads the relationships.
                let heard = try await redis.send("PUBSUB", "SHARDNUMSUB", ownChannel).array?.last?.int
                #expect(heard == 1, "the reconnect would not take the admission's read")
                try await app.withDevice(port: port, userId: "watcher", DeviceOptions(deviceId: "w1")) { watcher, _ in
                    _ = try await app.setStatus("bob", "dropped")
                    _ = try await app.setStatus("carol", "blocked")
                    _ = try await app.setStatus("alice", "made")
                    #expect(try await watcher.nextStatus(of: "alice")["customStatus"] == "made")
                    // Alice's change was published last: bob's and carol's would have arrived before it.
                    #expect(try await watcher.statusEvents(of: "bob", settle: .milliseconds(200)).isEmpty)
                    #expect(try await watcher.statusEvents(of: "carol", settle: .zero).isEmpty)
                }
            }
        }
    }
}
