import Foundation
import RedisClient
import Testing

/// The redis-server the tests run against: `STATUSD_TEST_REDIS_URL`, set by `scripts/test`, which starts a throwaway
/// server on a free port.
///
/// Without it (a bare `swift test`), the suites that need it, marked with the `.redis` trait, are skipped with the
/// reason, and a test elsewhere that asks for it is cancelled, which Swift Testing also reports as skipped rather than
/// failed: the pure tests still run, and the run says which ones needed Redis.
enum TestRedis {
    /// The variable's value; nil when it is not set.
    static let configuredURL = ProcessInfo.processInfo.environment["STATUSD_TEST_REDIS_URL"]

    /// Why a test that needs Redis did not run.
    static let missing: Comment = "needs Redis: STATUSD_TEST_REDIS_URL is not set (scripts/test starts a redis-server and sets it)"

    static var url: String {
        get throws {
            guard let url = configuredURL else {
                try Test.cancel(missing)
            }
            return url
        }
    }

    static var configuration: RedisConfiguration {
        get throws { try RedisConfiguration(url: url) }
    }
}

extension Trait where Self == ConditionTrait {
    /// On a suite whose tests need the test Redis: without `STATUSD_TEST_REDIS_URL` they are skipped, with this reason,
    /// before any of them starts a node (a test cancelled halfway, with servers up, would tear them down unfinished).
    static var redis: Self {
        .enabled(if: TestRedis.configuredURL != nil, TestRedis.missing)
    }
}
