import NIOCore
import Testing

@testable import RedisClient

@Suite("RedisSubscriber against redis-server", .timeLimit(.minutes(1)))
struct RedisSubscriberTests {
    /// Records the events a subscriber hands out.
    final class Recorder: Sendable {
        private let events = TestBox<[RedisPubSubEvent]>([])

        func record(_ event: RedisPubSubEvent) {
            self.events.withLock { $0.append(event) }
        }

        /// What each ``RedisPubSubEvent/lost(wholeUntil:)`` said, in order.
        var losses: [NIODeadline] {
            self.events.withLock { events in
                events.compactMap { if case .lost(let wholeUntil) = $0 { wholeUntil } else { nil } }
            }
        }

        var subscribedCount: Int {
            self.events.withLock { events in
                events.filter { if case .subscribed = $0 { true } else { false } }.count
            }
        }

        /// The events other than messages, in order: `subscribed` and `lost`.
        var connectionEvents: [String] {
            self.events.withLock { events in
                events.compactMap { event in
                    switch event {
                    case .subscribed: "subscribed"
                    case .lost: "lost"
                    case .message: nil
                    }
                }
            }
        }

        var messages: [(channel: String, payload: String)] {
            self.events.withLock { events in
                events.compactMap { event in
                    if case .message(let channel, let payload) = event {
                        return (channel, String(decoding: payload, as: UTF8.self))
                    }
                    return nil
                }
            }
        }
    }

    private func withSubscriber(
        url: String,
        channels: [String],
        pingInterval: TimeAmount = .seconds(1),
        _ body: (Recorder) async throws -> Void
    ) async throws {
        let recorder = Recorder()
        let subscriber = RedisSubscriber(
            configuration: try RedisConfiguration(url: url),
            channels: channels,
            pingInterval: pingInterval,
            logger: testLogger,
            handler: { recorder.record($0) }
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await subscriber.run() }
            defer { group.cancelAll() }
            try await body(recorder)
        }
    }

    @Test func receivesPublishedMessages() async throws {
        // A server of its own, also when the suite runs on a cluster: there PUBLISH counts only the receivers
        // connected to the node that took it.
        try await withPrivateRedisServer { server in
            let url = server.url
            let channel = uniqueKey("channel")
            let other = uniqueKey("other")
            try await withSubscriber(url: url, channels: [channel, other]) { recorder in
                #expect(await eventually { recorder.subscribedCount == 1 })
                try await withTestClient(url: url) { client in
                    let receivers = try await client.send("PUBLISH", channel, "hello")
                    #expect(receivers == .integer(1))
                    #expect(try await client.send("PUBLISH", other, "world") == .integer(1))
                }
                #expect(await eventually { recorder.messages.count == 2 })
                let messages = recorder.messages
                #expect(messages.first?.channel == channel)
                #expect(messages.first?.payload == "hello")
                #expect(messages.last?.channel == other)
                #expect(messages.last?.payload == "world")
            }
        }
    }

    @Test func resubscribesAfterTheServerKillsTheConnection() async throws {
        // A private server: CLIENT KILL TYPE pubsub would disturb other tests' subscribers on a shared one.
        try await withPrivateRedisServer { server in
            let channel = uniqueKey("channel")
            try await withSubscriber(url: server.url, channels: [channel]) { recorder in
                #expect(await eventually { recorder.subscribedCount == 1 })
                try await withTestClient(url: server.url) { client in
                    let killed = try await client.send("CLIENT", "KILL", "TYPE", "pubsub")
                    #expect(killed.int == 1)
                    #expect(await eventually { recorder.subscribedCount == 2 })
                    // The loss is told first: from then on, until the resubscription, messages may be missed.
                    #expect(recorder.connectionEvents == ["subscribed", "lost", "subscribed"])
                    #expect(try await client.send("PUBLISH", channel, "after kill") == .integer(1))
                    #expect(await eventually { recorder.messages.map(\.payload) == ["after kill"] })
                }
            }
        }
    }

    /// A subscription that falls silent (the server stopped, its socket open, as across a network that drops every
    /// packet) is lost a ping or two later, and the loss looks back to the last ping answered before the silence.
    @Test func aSilentSubscriptionIsLostFromItsLastAnsweredPing() async throws {
        try await withPrivateRedisServer { server in
            try await withSubscriber(url: server.url, channels: [uniqueKey("channel")], pingInterval: .milliseconds(200)) { recorder in
                #expect(await eventually { recorder.subscribedCount == 1 })
                let subscribedAt = NIODeadline.now()
                try await Task.sleep(for: .milliseconds(800))  // pings every 200 ms, answered
                let silentFrom = NIODeadline.now()
                server.pause()
                defer { server.resume() }
                #expect(await eventually { recorder.losses.count == 1 })
                let wholeUntil = try #require(recorder.losses.first)
                #expect(NIODeadline.now() - silentFrom >= .milliseconds(200), "noticed only when a ping goes unanswered")
                #expect(wholeUntil <= silentFrom, "nothing after the silence began is known to have arrived")
                #expect(wholeUntil > subscribedAt, "the pings answered since the subscription moved it on")
            }
        }
    }

    @Test func resubscribesAfterARedisRestart() async throws {
        try await withPrivateRedisServer { server in
            let channel = uniqueKey("channel")
            try await withSubscriber(url: server.url, channels: [channel]) { recorder in
                #expect(await eventually { recorder.subscribedCount == 1 })
                await server.stop()
                try await Task.sleep(for: .milliseconds(300))
                try await server.start()
                #expect(await eventually { recorder.subscribedCount == 2 })
                try await withTestClient(url: server.url) { client in
                    let receivers = try await client.send("PUBLISH", channel, "back")
                    #expect(receivers == .integer(1))
                }
                #expect(await eventually { recorder.messages.map(\.payload) == ["back"] })
            }
        }
    }
}
