import Foundation
import RedisClient

/// The redis-server the tests run against: `STATUSD_TEST_REDIS_URL`, set by `scripts/test`, which starts a throwaway
/// server on a free port.
enum TestRedis {
    static var url: String {
        guard let url = ProcessInfo.processInfo.environment["STATUSD_TEST_REDIS_URL"] else {
            fatalError("STATUSD_TEST_REDIS_URL is not set: run the tests with scripts/test, which starts a redis-server")
        }
        return url
    }

    static var configuration: RedisConfiguration {
        get throws { try RedisConfiguration(url: url) }
    }
}
