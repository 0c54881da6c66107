import RedisClient
import Testing

@Suite("Values, configuration, scripts, errors")
struct RedisValueTests {
    @Test func accessorsReadTheRightCases() {
        #expect(RedisValue.simpleString("OK").string == "OK")
        #expect(RedisValue.bulkString(Array("héllo".utf8)).string == "héllo")
        #expect(RedisValue.integer(3).string == nil)
        #expect(RedisValue.error("ERR").string == nil)
        #expect(RedisValue.integer(-5).int == -5)
        #expect(RedisValue.bulkString(Array("17".utf8)).int == 17)
        #expect(RedisValue.simpleString("8").int == 8)
        #expect(RedisValue.bulkString(Array("x".utf8)).int == nil)
        #expect(RedisValue.null.int == nil)
        #expect(RedisValue.array([.null]).array == [.null])
        #expect(RedisValue.null.array == nil)
        #expect(RedisValue.null.isNull)
        #expect(!RedisValue.bulkString([]).isNull)
        #expect(RedisValue.bulkString([1, 2]).bytes == [1, 2])
    }

    @Test func parsesTCPURLs() throws {
        let plain = try RedisConfiguration(url: "redis://127.0.0.1:6390")
        #expect(plain.endpoint == .tcp(host: "127.0.0.1", port: 6390))
        #expect(plain.password == nil)
        #expect(plain.database == 0)
        #expect(plain.poolSize == 4)
        #expect(plain.commandTimeout == .milliseconds(1500))
        #expect(plain.connectTimeout == .seconds(1))
        #expect(plain.maxPendingPerConnection == 100_000)

        let full = try RedisConfiguration(url: "redis://:p%40ss@redis.example:7000/3")
        #expect(full.endpoint == .tcp(host: "redis.example", port: 7000))
        #expect(full.password == "p@ss")
        #expect(full.database == 3)

        let defaults = try RedisConfiguration(url: "redis://cache")
        #expect(defaults.endpoint == .tcp(host: "cache", port: 6379))

        let withUser = try RedisConfiguration(url: "redis://default:secret@[::1]:6380/")
        #expect(withUser.endpoint == .tcp(host: "::1", port: 6380))
        #expect(withUser.password == "secret")
    }

    @Test func parsesUnixSocketURLs() throws {
        #expect(try RedisConfiguration(url: "unix:///run/redis/redis.sock").endpoint == .unixSocket(path: "/run/redis/redis.sock"))
        let withQuery = try RedisConfiguration(url: "redis+unix:///tmp/r.sock?db=2&password=pw")
        #expect(withQuery.endpoint == .unixSocket(path: "/tmp/r.sock"))
        #expect(withQuery.database == 2)
        #expect(withQuery.password == "pw")
    }

    @Test(arguments: ["http://localhost", "redis://host:notaport", "redis://host:0", "redis://host/x", "unix://relative", "rediss://host"])
    func rejectsBadURLs(url: String) {
        #expect(throws: RedisURLError.self) { try RedisConfiguration(url: url) }
    }

    @Test func scriptSHA1IsLowercaseHex() {
        #expect(RedisScript(name: "one", source: "return 1").sha1 == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
        #expect(RedisScript(name: "pair", source: "return {KEYS[1], ARGV[1]}").sha1 == "d006f1a90249474274c76f5be725b8f5804a346b")
    }

    @Test func connectionProblemsAreClassified() {
        let problems: [RedisClientError.Kind] = [.connectionUnavailable, .connectionClosed, .timeout, .tooManyPending]
        for kind in problems {
            #expect(RedisClientError(kind: kind, message: "").isConnectionProblem)
        }
        #expect(!RedisClientError(kind: .server, message: "ERR").isConnectionProblem)
        #expect(!RedisClientError(kind: .protocolError, message: "").isConnectionProblem)
        #expect("\(RedisClientError(kind: .server, message: "ERR x"))".contains("ERR x"))
    }
}
