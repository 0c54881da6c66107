import Foundation
import NIOCore
import NIOPosix
import RedisClient
import Testing

@Suite("RedisClient against redis-server", .timeLimit(.minutes(1)))
struct RedisClientIntegrationTests {
    @Test func setGetIncr() async throws {
        try await withRedisURL { url in
            try await withTestClient(url: url) { client in
                let key = uniqueKey("setget")
                let set = try await client.send("SET", key, "hello")
                #expect(set == .simpleString("OK"))
                #expect(try await client.send("GET", key).string == "hello")
                #expect(try await client.send("GET", key + ":missing").isNull)
                #expect(try await client.send("INCR", key + ":n") == .integer(1))
                #expect(try await client.send(["INCRBY", key + ":n", "41"]).int == 42)
                #expect(try await client.send("DEL", key, key + ":n") == .integer(2))
            }
        }
    }

    @Test func errorReplyIsThrownAsServerError() async throws {
        try await withRedisURL { url in
            try await withTestClient(url: url) { client in
                let key = uniqueKey("error")
                _ = try await client.send("SET", key, "not a number")
                let error = try await #require(throws: RedisClientError.self) { try await client.send("INCR", key) }
                #expect(error.kind == .server)
                #expect(error.message.hasPrefix("ERR"))
                #expect(!error.isConnectionProblem)
                // The connection is still usable afterwards.
                #expect(try await client.send("GET", key).string == "not a number")
                _ = try await client.send("DEL", key)
            }
        }
    }

    @Test func pipelineReturnsErrorRepliesInPlace() async throws {
        try await withRedisURL { url in
            try await withTestClient(url: url) { client in
                let key = uniqueKey("pipeline")
                var commands: [[String]] = []
                for index in 0..<200 {
                    commands.append(["RPUSH", key, "\(index)"])
                }
                commands.append(["INCR", key])  // WRONGTYPE: the key holds a list
                for index in 0..<200 {
                    commands.append(["LINDEX", key, "\(index)"])
                }
                let replies = try await client.pipeline(commands)
                #expect(replies.count == 401)
                for index in 0..<200 {
                    #expect(replies[index] == .integer(Int64(index + 1)))
                    #expect(replies[201 + index].string == "\(index)")
                }
                guard case .error(let message) = replies[200] else {
                    Issue.record("expected an error reply, got \(replies[200])")
                    return
                }
                #expect(message.hasPrefix("WRONGTYPE"))
                #expect(try await client.pipeline([]) == [])
                _ = try await client.send("DEL", key)
            }
        }
    }

    @Test(arguments: [1, 3])
    func thousandConcurrentSendsEachGetTheirOwnReply(poolSize: Int) async throws {
        try await withRedisURL { url in
            try await withConfiguredClient(testConfiguration(url) { $0.poolSize = poolSize }) { client in
                let prefix = uniqueKey("concurrent")
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<1000 {
                        group.addTask {
                            let value = "value-\(index)-\(String(repeating: "x", count: index % 50))"
                            let echoed = try await client.send("ECHO", value)
                            let set = try await client.send("SET", "\(prefix):\(index)", value)
                            let got = try await client.send("GET", "\(prefix):\(index)")
                            #expect(echoed.string == value)
                            #expect(set == .simpleString("OK"))
                            #expect(got.string == value)
                        }
                    }
                    try await group.waitForAll()
                }
                let keys = (0..<1000).map { "\(prefix):\($0)" }
                #expect(try await client.send(["DEL"] + keys) == .integer(1000))
            }
        }
    }

    @Test func evalScriptLoadsTheScriptOnNoScript() async throws {
        try await withPrivateRedisServer { server in
            try await withTestClient(url: server.url) { client in
                let script = RedisScript(name: "pair", source: "return {KEYS[1], ARGV[1], redis.call('INCR', KEYS[1])}")
                let key = uniqueKey("script")
                // Not loaded yet: NOSCRIPT, load, retry.
                let first = try await client.evalScript(script, keys: [key], arguments: ["a"])
                #expect(first == .array([.bulkString(Array(key.utf8)), .bulkString([97]), .integer(1)]))
                #expect(try await client.send("SCRIPT", "EXISTS", script.sha1) == .array([.integer(1)]))
                _ = try await client.send("SCRIPT", "FLUSH")
                #expect(try await client.send("SCRIPT", "EXISTS", script.sha1) == .array([.integer(0)]))
                let second = try await client.evalScript(script, keys: [key], arguments: ["b"])
                #expect(second.array?.last == .integer(2))
                // The call itself went again as EVAL (it runs on whatever master it lands on, loaded there or not), and
                // the script is loaded again for the calls after it.
                #expect(try await client.send("SCRIPT", "EXISTS", script.sha1) == .array([.integer(1)]))
                // A script error is still thrown as a server error.
                let failing = RedisScript(name: "failing", source: "return redis.error_reply('NOPE broken')")
                let error = try await #require(throws: RedisClientError.self) {
                    try await client.evalScript(failing, keys: [], arguments: [])
                }
                #expect(error.kind == .server)
                #expect(error.message.hasPrefix("NOPE"))
            }
        }
    }

    /// A script whose keys span hash slots runs on a single server when the caller says so (a debug build stops at it
    /// otherwise), and is loaded on NOSCRIPT like any other.
    @Test func aScriptAcrossSlotsRunsOnASingleServer() async throws {
        try await withPrivateRedisServer { server in
            try await withTestClient(url: server.url) { client in
                let script = setBothKeysScript
                let keys = ["{a}" + uniqueKey("across"), "{b}" + uniqueKey("across")]
                let reply = try await client.evalScript(script, keys: keys, arguments: ["v"], acrossSlots: true)
                #expect(reply == .integer(2))
                let values = [try await client.send("GET", keys[0]).string, try await client.send("GET", keys[1]).string]
                #expect(values == ["v", "v"])
            }
        }
    }

    @Test func loadScriptsLoadsEveryScript() async throws {
        try await withPrivateRedisServer { server in
            try await withTestClient(url: server.url) { client in
                let scripts = [RedisScript(name: "one", source: "return 1"), RedisScript(name: "two", source: "return 2")]
                try await client.loadScripts(scripts)
                #expect(try await client.send(["SCRIPT", "EXISTS"] + scripts.map(\.sha1)) == .array([.integer(1), .integer(1)]))
                let broken = RedisScript(name: "broken", source: "return (")
                let error = try await #require(throws: RedisClientError.self) { try await client.loadScripts([broken]) }
                #expect(error.kind == .server)
            }
        }
    }

    @Test func recoversAfterARedisRestart() async throws {
        try await withPrivateRedisServer { server in
            try await withConfiguredClient(testConfiguration(server.url) { $0.poolSize = 2 }) { client in
                #expect(try await client.send("PING") == .simpleString("PONG"))
                await server.stop()
                // The first calls find the connection closed or the server gone.
                var sawConnectionProblem = false
                for _ in 0..<4 {
                    do {
                        _ = try await client.send("PING")
                    } catch let error as RedisClientError {
                        #expect(error.isConnectionProblem, "\(error)")
                        sawConnectionProblem = true
                    }
                }
                #expect(sawConnectionProblem)
                try await server.start()
                let recovered = await eventually(within: .seconds(8)) {
                    (try? await client.send("PING")) == .simpleString("PONG")
                }
                #expect(recovered)
                // Once back, every pooled connection works.
                for _ in 0..<10 {
                    #expect(try await client.send("PING") == .simpleString("PONG"))
                }
            }
        }
    }

    @Test func failsFastWhenNothingListens() async throws {
        let port = try await RedisTestServer.freePort()
        try await withConfiguredClient(testConfiguration("redis://127.0.0.1:\(port)") { $0.poolSize = 1 }) { client in
            let start = ContinuousClock.now
            let first = try await #require(throws: RedisClientError.self) { try await client.send("PING") }
            #expect(first.kind == .connectionUnavailable)
            #expect(first.isConnectionProblem)
            // During the backoff, calls fail at once without trying to connect.
            let second = try await #require(throws: RedisClientError.self) { try await client.send("PING") }
            #expect(second.kind == .connectionUnavailable)
            #expect(ContinuousClock.now - start < .seconds(1))
        }
    }

    @Test func commandTimeoutFailsTheCallAndTheConnectionRecovers() async throws {
        try await withRedisURL { url in
            try await withConfiguredClient(
                testConfiguration(url) {
                    $0.poolSize = 1
                    $0.commandTimeout = .milliseconds(300)
                }
            ) { client in
                let key = uniqueKey("blocked")
                let start = ContinuousClock.now
                let error = try await #require(throws: RedisClientError.self) { try await client.send("BLPOP", key, "3") }
                #expect(error.kind == .timeout)
                #expect(ContinuousClock.now - start < .seconds(2))
                // The server is taken for silent: the next call fails at once instead of waiting a second time...
                let refusedAt = ContinuousClock.now
                let refused = try await #require(throws: RedisClientError.self) { try await client.send("PING") }
                #expect(refused.kind == .connectionUnavailable)
                #expect(ContinuousClock.now - refusedAt < .milliseconds(100))
                // ...until a probe, at most every 250 ms, finds it answering.
                try await Task.sleep(for: .milliseconds(300))
                #expect(try await client.send("PING") == .simpleString("PONG"))
                #expect(try await client.send("PING") == .simpleString("PONG"))
            }
        }
    }

    @Test func boundsCommandsInFlight() async throws {
        // A server of its own, also when the suite runs on a cluster: there the PING would go to another master's
        // connection than the BLPOP, and nothing would be in flight before it.
        try await withPrivateRedisServer { server in
            try await withConfiguredClient(
                testConfiguration(server.url) {
                    $0.poolSize = 1
                    $0.maxPendingPerConnection = 1
                }
            ) { client in
                let key = uniqueKey("pending")
                try await withTestClient(url: server.url) { observer in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            let popped = try await client.send("BLPOP", key, "30")
                            #expect(!popped.isNull)
                        }
                        // The BLPOP is in flight once the server holds it blocked (a busy machine may take a while to
                        // send it): only then is the connection's one place taken.
                        #expect(await Self.oneClientBlocks(observer), "the BLPOP never blocked")
                        let error = try await #require(throws: RedisClientError.self) { try await client.send("PING") }
                        #expect(error.kind == .tooManyPending)
                        let pipelineError = try await #require(throws: RedisClientError.self) {
                            try await client.pipeline([["PING"], ["PING"]])
                        }
                        #expect(pipelineError.kind == .tooManyPending)
                        _ = try await observer.send("LPUSH", key, "done")
                        try await group.waitForAll()
                    }
                }
                #expect(try await client.send("PING") == .simpleString("PONG"))
            }
        }
    }

    /// Whether the server `observer` talks to comes to hold exactly one client blocked (a `BLPOP` in flight), within
    /// ``eventually(within:_:)``'s time.
    private static func oneClientBlocks(_ observer: RedisClient) async -> Bool {
        await eventually {
            let info = try? await observer.send("INFO", "clients")
            return info?.string?.contains("blocked_clients:1") == true
        }
    }

    @Test func closeFailsCallsInFlight() async throws {
        // A server of its own, so that its one blocked client is this test's BLPOP.
        try await withPrivateRedisServer { server in
            let client = RedisClient(configuration: try RedisConfiguration(url: server.url), logger: testLogger)
            let key = uniqueKey("close")
            #expect(try await client.send("PING") == .simpleString("PONG"))
            try await withTestClient(url: server.url) { observer in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        let error = try await #require(throws: RedisClientError.self) { try await client.send("BLPOP", key, "3") }
                        #expect(error.kind == .connectionClosed)
                    }
                    // Closed as soon as Redis holds the BLPOP (not after a fixed pause: on a busy machine the call's own
                    // 1.5 s deadline could come first).
                    #expect(await Self.oneClientBlocks(observer), "the BLPOP never blocked")
                    await client.close()
                    try await group.waitForAll()
                }
            }
            let after = try await #require(throws: RedisClientError.self) { try await client.send("PING") }
            #expect(after.kind == .connectionClosed)
        }
    }

    @Test func runClosesTheClientWhenCancelled() async throws {
        try await withRedisURL { url in
            let client = RedisClient(configuration: try RedisConfiguration(url: url), logger: testLogger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await client.run() }
                #expect(try await client.send("PING") == .simpleString("PONG"))
                group.cancelAll()
                try await group.waitForAll()
            }
            let error = try await #require(throws: RedisClientError.self) { try await client.send("PING") }
            #expect(error.kind == .connectionClosed)
        }
    }

    @Test func authenticatesAndSelectsTheDatabase() async throws {
        try await withPrivateRedisServer(extraArguments: ["--requirepass", "s3cret"]) { server in
            let key = uniqueKey("db")
            try await withTestClient(url: "redis://:s3cret@127.0.0.1:\(server.port)/2") { client in
                _ = try await client.send("SET", key, "in db 2")
                #expect(try await client.send("GET", key).string == "in db 2")
            }
            try await withTestClient(url: "redis://:s3cret@127.0.0.1:\(server.port)") { client in
                let inDatabase0 = try await client.send("GET", key)
                #expect(inDatabase0.isNull)
            }
            try await withConfiguredClient(testConfiguration("redis://:wrong@127.0.0.1:\(server.port)") { $0.poolSize = 1 }) { client in
                let error = try await #require(throws: RedisClientError.self) { try await client.send("PING") }
                #expect(error.kind == .connectionUnavailable)
            }
        }
    }

    @Test func connectsOverAUnixSocket() async throws {
        let path = "/tmp/rc-test-\(UInt32.random(in: 0...UInt32.max)).sock"
        try await withPrivateRedisServer(extraArguments: ["--unixsocket", path, "--unixsocketperm", "700"]) { _ in
            try await withTestClient(url: "unix://\(path)") { client in
                let pong = try await client.send("PING")
                #expect(pong == .simpleString("PONG"))
                let key = uniqueKey("unix")
                let replies = try await client.pipeline([["SET", key, "1"], ["INCR", key], ["DEL", key]])
                #expect(replies == [.simpleString("OK"), .integer(2), .integer(1)])
            }
        }
    }
}
