import Foundation
import Testing

@testable import RedisClient

/// The setup of every connection the client opens (commands, a ``RedisSubscriber``, a ``RedisShardSubscriber``): `AUTH`
/// with a password, and `CLIENT SETNAME` with `RedisConfiguration.clientName`, so that `CLIENT LIST` says whose each
/// connection is. The setup goes before anything else on the connection.
@Suite("RedisClient connection setup", .timeLimit(.minutes(1)))
struct RedisClientSetupTests {
    @Test func everyConnectionCarriesTheConfiguredName() async throws {
        try await withPrivateRedisServer { server in
            let configuration = try testConfiguration(server.url) { $0.clientName = "statusd-test_1" }
            try await withConfiguredClient(configuration) { client in
                #expect(try await client.send("CLIENT", "GETNAME").string == "statusd-test_1")
                let plain = RedisSubscriber(configuration: configuration, channels: ["plain"], logger: testLogger) { _ in }
                let sharded = RedisShardSubscriber(client: client, logger: testLogger) { _ in }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await plain.run() }
                    group.addTask { try await sharded.run() }
                    defer { group.cancelAll() }
                    try await sharded.subscribe(["bus:{a}"])
                    let both = await eventually {
                        let list = (try? await client.send("CLIENT", "LIST", "TYPE", "pubsub").string) ?? ""
                        return list.split(separator: "\n").count == 2
                    }
                    #expect(both, "both subscribers connected")
                    let lines = try await client.send("CLIENT", "LIST").string?.split(separator: "\n") ?? []
                    #expect(lines.count >= 3)
                    for line in lines {
                        #expect(line.split(separator: " ").contains("name=statusd-test_1"), "\(line)")
                    }
                }
            }
        }
    }

    @Test func theSetupCommandsFollowTheConfiguration() throws {
        var configuration = try RedisConfiguration(url: "redis://:secret@localhost:6379/2")
        #expect(configuration.setupCommands(selecting: true) == [["AUTH", "secret"], ["SELECT", "2"]])
        configuration.clientName = "n1"
        #expect(configuration.setupCommands(selecting: true) == [["AUTH", "secret"], ["CLIENT", "SETNAME", "n1"], ["SELECT", "2"]])
        #expect(configuration.setupCommands(selecting: false) == [["AUTH", "secret"], ["CLIENT", "SETNAME", "n1"]])
    }

    /// A shard subscription on a server with a password: `AUTH` is written before `SSUBSCRIBE` (the link's first
    /// write), never after it.
    @Test func shardSubscriptionsAuthenticateFirst() async throws {
        try await withPrivateRedisServer(extraArguments: ["--requirepass", "s3cret"]) { server in
            let configuration = try testConfiguration("redis://:s3cret@127.0.0.1:\(server.port)") { $0.clientName = "authed" }
            try await withConfiguredClient(configuration) { client in
                let received = TestBox<[String]>([])
                let subscriber = RedisShardSubscriber(client: client, logger: testLogger) { event in
                    if case .message(_, let payload) = event { received.withLock { $0.append(String(decoding: payload, as: UTF8.self)) } }
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await subscriber.run() }
                    defer { group.cancelAll() }
                    try await subscriber.subscribe(["bus:{a}"])
                    #expect(try await client.send("SPUBLISH", "bus:{a}", "hello") == .integer(1))
                    #expect(await eventually { received.withLock { $0 } == ["hello"] })
                }
            }
        }
    }
}
