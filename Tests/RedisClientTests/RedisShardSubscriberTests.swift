import Foundation
import NIOCore
import NIOPosix
import RedisTestSupport
import Testing

@testable import RedisClient

/// Sharded pub/sub against real servers: a single redis-server (where `SSUBSCRIBE` works too) and a 3-master cluster,
/// with connections killed and slots moved under the subscriber.
@Suite("RedisShardSubscriber", .serialized, .timeLimit(.minutes(2)))
struct RedisShardSubscriberTests {
    /// What a subscriber received.
    final class Received: Sendable {
        let messages = TestBox<[String: [String]]>([:])
        let gaps = TestBox(0)
        let losses = TestBox(0)
        /// What the last ``RedisPubSubEvent/lost(wholeUntil:)`` said.
        let wholeUntil = TestBox<NIODeadline?>(nil)

        func handle(_ event: RedisPubSubEvent) {
            switch event {
            case .message(let channel, let payload):
                messages.withLock { $0[channel, default: []].append(String(decoding: payload, as: UTF8.self)) }
            case .subscribed:
                gaps.withLock { $0 += 1 }
            case .lost(let whole):
                losses.withLock { $0 += 1 }
                wholeUntil.withLock { $0 = whole }
            }
        }

        func of(_ channel: String) -> [String] { messages.withLock { $0[channel] ?? [] } }
    }

    /// Runs `body` with a client for `url` and a running subscriber on it.
    func withSubscriber(url: String, _ body: (RedisClient, RedisShardSubscriber, Received) async throws -> Void) async throws {
        try await withTestClient(url: url) { client in
            let received = Received()
            let subscriber = RedisShardSubscriber(client: client, pingInterval: .milliseconds(200), logger: testLogger) { received.handle($0) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await subscriber.run() }
                defer { group.cancelAll() }
                try await body(client, subscriber, received)
            }
        }
    }

    @Test func subscribesReceivesAndUnsubscribesOnOneServer() async throws {
        try await withPrivateRedisServer { server in
            try await withSubscriber(url: server.url) { client, subscriber, received in
                let channels = (0..<50).map { "bus:{u\($0)}" }
                try await subscriber.subscribe(channels)
                #expect(await subscriber.channelCount() == 50)
                for channel in channels {
                    #expect(try await client.send("SPUBLISH", channel, "hello \(channel)") == .integer(1))
                }
                #expect(await eventually { channels.allSatisfy { received.of($0) == ["hello \($0)"] } })
                subscriber.unsubscribe(Array(channels.prefix(25)))
                // Probes until Redis counts no subscriber (a probe sent before that may still be delivered).
                #expect(await eventually { (try? await client.send("SPUBLISH", channels[0], "probe")) == .integer(0) })
                #expect(try await client.send("SPUBLISH", channels[0], "late") == .integer(0))
                #expect(try await client.send("SPUBLISH", channels[30], "still") == .integer(1))
                #expect(await eventually { received.of(channels[30]) == ["hello \(channels[30])", "still"] })
                #expect(received.of(channels[0]).filter { $0 != "probe" } == ["hello \(channels[0])"])
                #expect(received.gaps.withLock { $0 } == 0)
            }
        }
    }

    @Test func aKilledConnectionIsResubscribedAndReportedAsAGap() async throws {
        try await withPrivateRedisServer { server in
            try await withSubscriber(url: server.url) { client, subscriber, received in
                try await subscriber.subscribe(["bus:{a}", "bus:{b}"])
                #expect(received.losses.withLock { $0 } == 0)
                _ = try await client.send("CLIENT", "KILL", "TYPE", "pubsub")
                #expect(await eventually { received.gaps.withLock { $0 } == 1 })
                // The loss was told too, before the resubscription (``RedisPubSubEvent/lost``).
                #expect(received.losses.withLock { $0 } == 1)
                #expect(try await client.send("SPUBLISH", "bus:{b}", "after") == .integer(1))
                #expect(await eventually { received.of("bus:{b}") == ["after"] })
            }
        }
    }

    /// A connection that falls silent (the server stopped, its sockets open, as across a network that drops every
    /// packet) is noticed a ping or two later. Its loss looks back to the last ping answered before the silence, not to
    /// the moment it was noticed: what was published in between may have been missed.
    @Test func aSilentConnectionIsLostFromItsLastAnsweredPing() async throws {
        try await withPrivateRedisServer { server in
            try await withSubscriber(url: server.url) { _, subscriber, received in
                try await subscriber.subscribe(["bus:{a}"])
                let subscribedAt = NIODeadline.now()
                try await Task.sleep(for: .milliseconds(800))  // pings every 200 ms, answered
                let silentFrom = NIODeadline.now()
                server.pause()
                defer { server.resume() }
                #expect(await eventually { received.losses.withLock { $0 } == 1 })
                let noticedAfter = NIODeadline.now() - silentFrom
                let wholeUntil = try #require(received.wholeUntil.withLock { $0 })
                #expect(noticedAfter >= .milliseconds(200), "a silence is noticed only when a ping goes unanswered")
                #expect(wholeUntil <= silentFrom, "nothing after the silence began is known to have arrived")
                #expect(wholeUntil > subscribedAt, "the pings answered since the subscription moved it on")
            }
        }
    }

    @Test func aRestartedServerIsResubscribedToo() async throws {
        try await withPrivateRedisServer { server in
            try await withSubscriber(url: server.url) { client, subscriber, received in
                try await subscriber.subscribe(["bus:{a}"])
                await server.stop()
                try await server.start()
                #expect(await eventually { received.gaps.withLock { $0 } >= 1 })
                #expect(await eventually { (try? await client.send("SPUBLISH", "bus:{a}", "back")) == .integer(1) })
                #expect(await eventually { received.of("bus:{a}").contains("back") })
            }
        }
    }

    @Test func channelsFollowTheirSlotAcrossACluster() async throws {
        try await withTestCluster { cluster in
            try await withSubscriber(url: cluster.url) { client, subscriber, received in
                let channels = (0..<60).map { "bus:{u\($0)}" }
                try await subscriber.subscribe(channels)
                // Spread over every master, each published where its slot lives and heard once.
                let slotOwners = try cluster.slotOwners()
                let owners = Set(channels.compactMap { slotOwners[RedisKeySlot.of($0)] })
                #expect(owners.count == 3)
                for channel in channels {
                    #expect(try await client.send("SPUBLISH", channel, "one") == .integer(1))
                }
                #expect(await eventually { channels.allSatisfy { received.of($0) == ["one"] } })
                // Move the slot of one channel to another master: Redis drops the subscription there, the subscriber
                // subscribes where the slot went, reports the gap, and hears the channel again.
                let moved = channels[5]
                let slot = RedisKeySlot.of(moved)
                let from = try cluster.masterPort(ofSlot: slot)
                let to = cluster.nodes.map(\.port).first { $0 != from }!
                try cluster.migrate(slot: slot, from: from, to: to)
                #expect(await eventually { received.gaps.withLock { $0 } >= 1 })
                // The move was told as a loss first: until the channel is subscribed where its slot went, what is
                // published there is missed.
                #expect(received.losses.withLock { $0 } >= 1)
                #expect(try cluster.cli(["-p", "\(to)", "SPUBLISH", moved, "two"]).hasPrefix("1"))
                #expect(await eventually { received.of(moved) == ["one", "two"] })
            }
        }
    }

    @Test func aFailedOverMasterHandsItsChannelsToThePromotedReplica() async throws {
        try await withTestCluster(masters: 3, replicas: 1) { cluster in
            try await withSubscriber(url: cluster.url) { client, subscriber, received in
                let owners = try cluster.slotOwners()
                let channels = (0..<60).map { "bus:{u\($0)}" }.filter { owners[RedisKeySlot.of($0)] == cluster.nodes[0].port }
                #expect(!channels.isEmpty)
                try await subscriber.subscribe(channels)
                await cluster.kill(0)
                // The cluster's own failover (its node timeout, then the replica's election) decides when; on a loaded
                // machine it has taken over 20 s.
                #expect(await eventually(within: .seconds(45)) { received.gaps.withLock { $0 } >= 1 })
                #expect(await eventually(within: .seconds(20)) { (try? await client.send("SPUBLISH", channels[0], "promoted")) == .integer(1) })
                #expect(await eventually { received.of(channels[0]) == ["promoted"] })
            }
        }
    }
}
