import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// `query_rate_limit.lua` on Redis itself: the calls left it answers come from the count its rate limit took (SPEC §5),
/// one less with each accepted call, until the window is full and the call is refused.
@Suite(.redis) struct QueryRateLimitScriptTests {
    @Test func callsLeftFallByOneWithEachAcceptedCall() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "rate-limit-script"))
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await redis.run() }
            let appId = "rl\(UInt32.random(in: 0...UInt32.max))"
            let user = RedisKeys(appId: appId).user("alice")
            _ = try await redis.send("HSET", user.profile, "createdAt", "1")
            let runner = ScriptRunner(redis: redis, scripts: try ScriptLibrary.load())
            let arguments = QueryRateLimit.Arguments(
                rateLimit: RateLimitArguments(AppConfig.RateLimit(calls: 3, windowSeconds: 60)),
                asked: ["bob"]
            )
            var left: [Int] = []
            for _ in 0..<3 {
                let reply = try await runner.run(QueryRateLimit.self, keys: .init(user: user, operation: .getUserStatus), arguments: arguments)
                left.append(reply.admission.callsLeft)
            }
            #expect(left == [2, 1, 0])
            await #expect(throws: StatusError.self) {
                _ = try await runner.run(QueryRateLimit.self, keys: .init(user: user, operation: .getUserStatus), arguments: arguments)
            }
            _ = try await redis.send(["DEL", user.profile, user.rateLimit(.getUserStatus)])
            group.cancelAll()
        }
    }
}
