import Foundation
import RedisClient
import StatusServer
import StatusdClient
import Testing

/// SPEC §7 errors as the client's typed ``StatusdError``: the body's code and message, the HTTP status, and
/// `retryAfterMs` of a rate-limited call.
@Suite(.redis) struct StatusdClientErrorTests {
    private func expectError(
        _ code: StatusdError.Code,
        _ status: Int,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ call: () async throws -> some Any
    ) async {
        let error = await #expect(throws: StatusdError.self, sourceLocation: sourceLocation) { _ = try await call() }
        #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.httpStatus == status, sourceLocation: sourceLocation)
        #expect(error?.message.isEmpty == false, sourceLocation: sourceLocation)
    }

    @Test func refusalsBecomeTypedErrors() async throws {
        try await withStatusd(.live) { api in
            let premium = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 1, "windowSeconds": 60]])
            let app = try premium.appFacade()
            try await app.putUser("alice")
            try await app.putUser("bob")

            await expectError(.customStatusTooLong, 400) { try await app.setSelfStatus("alice", customStatus: String(repeating: "x", count: 101)) }
            await expectError(.invalidUserId, 400) { try await app.getUser("not an id") }
            await expectError(.unauthorized, 401) {
                try await StatusdApp(try api.endpoint(), appId: premium.appId, apiKey: "wrong").getUser("alice")
            }
            await expectError(.userNotFound, 404) { try await app.getUser("nobody") }
            await expectError(.appExists, 409) { try await api.adminFacade().createApp(premium.appId) }

            _ = try await app.getUserStatus(["bob"], as: "alice")
            let limited = await #expect(throws: StatusdError.self) { try await app.getUserStatus(["bob"], as: "alice") }
            #expect(limited?.code == .rateLimited && limited?.httpStatus == 429)
            let retryAfterMs = try #require(limited?.retryAfterMs)
            #expect(retryAfterMs > 0 && retryAfterMs <= 60_000)

            let basic = try await api.createApp()
            let basicApp = try basic.appFacade()
            try await basicApp.putUser("carol")
            try await basicApp.putUser("dave")
            await expectError(.planNotSupported, 403) { try await basicApp.subscribeUserStatus(["dave"], for: "carol") }
        }
    }

    @Test func anUnreachableRedisIs503() async throws {
        let closedPort: (inout ServerConfiguration) -> Void = { $0.redis = RedisConfiguration(endpoint: .tcp(host: "127.0.0.1", port: 1)) }
        try await withStatusd(.live, configure: closedPort) { api in
            await expectError(.unavailable, 503) { try await api.adminFacade().createApp("unreachable") }
        }
    }
}
