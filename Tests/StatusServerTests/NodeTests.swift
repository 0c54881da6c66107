import Foundation
import Hummingbird
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §3 (config changes reach every node within 1 s) and §7 `UNAVAILABLE`.
@Suite(.redis) struct NodeTests {
    @Test func configChangeReachesAnotherNodeWithin1Second() async throws {
        let adminKey = "admin-" + UUID().uuidString
        try await withStatusd(adminKey: adminKey) { first in
            let app = try await first.createApp()
            try await app.createUsers(["alice", "bob"])
            try await withStatusd(adminKey: adminKey) { second in
                var other = second
                other.appId = app.appId
                other.apiKey = app.apiKey
                // The second node has the app cached as basic.
                expectError(try await other.query("alice", ["bob"]), 403, "PLAN_NOT_SUPPORTED")
                try await app.patchConfig(["plan": "premium", "statusQuery": true])
                let clock = ContinuousClock()
                let start = clock.now
                var status = 0
                while clock.now - start < .milliseconds(1500) {
                    status = try await other.query("alice", ["bob"]).status
                    if status == 200 { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(status == 200)
                #expect(clock.now - start <= .seconds(1))
                // And a deletion: the key stops working there too.
                #expect(try await first.admin(.delete, "/v1/apps/\(app.appId)").status == 204)
                try await Task.sleep(for: .seconds(1))
                expectError(try await other.query("alice", ["alice"]), 401, "UNAUTHORIZED")
            }
        }
    }

    @Test func redisDownIsUnavailableAndTheServiceStaysUp() async throws {
        // A port nobody listens on.
        let port = try Self.closedPort()
        let configure: (inout ServerConfiguration) -> Void = { configuration in
            configuration.redis = RedisConfiguration(endpoint: .tcp(host: "127.0.0.1", port: port))
            configuration.redis.connectTimeout = .milliseconds(300)
            configuration.redis.commandTimeout = .milliseconds(500)
        }
        try await withStatusd(configure: configure) { api in
            let health = try await api.raw(.get, "/healthz", key: nil)
            #expect(health.status == 200)
            expectError(try await api.raw(.get, "/readyz", key: nil), 503, "UNAVAILABLE")
            expectError(try await api.admin(.post, "/v1/apps", ["appId": "down"]), 503, "UNAVAILABLE")
            expectError(try await api.raw(.get, "/v1/apps/down/users/alice", key: "sk_whatever"), 503, "UNAVAILABLE")
            #expect(try await api.raw(.get, "/healthz", key: nil).status == 200)
        }
    }

    /// A TCP port that was free a moment ago.
    static func closedPort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                guard bind(socket, raw, length) == 0, getsockname(socket, raw, &length) == 0 else {
                    throw TestAppError(message: "no free port")
                }
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
