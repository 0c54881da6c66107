import Testing

@testable import StatusServer

@Suite(.redis) struct SmokeTests {
    @Test func healthAndAppCreation() async throws {
        try await withStatusd { api in
            let health = try await api.raw(.get, "/healthz", key: nil)
            #expect(health.status == 200)
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            let status = try await app.call(.put, "/users/alice/status", ["customStatus": "hi"])
            #expect(status.status == 200)
            #expect(status.body["customStatus"].string == "hi")
            #expect(status.body["version"].int == 1)
        }
    }
}
