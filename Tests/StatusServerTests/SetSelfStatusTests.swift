import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §1 customStatus and §4 setSelfStatus through `PUT /users/{userId}/status`.
@Suite(.redis) struct SetSelfStatusTests {
    @Test func exactly100BytesIsAcceptedAnd101Rejected() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let hundred = String(repeating: "x", count: 100)
            let accepted = try await app.setStatus("alice", hundred)
            #expect(accepted.status == 200)
            #expect(accepted.body["customStatus"].string == hundred)
            #expect(accepted.body["version"].int == 1)
            #expect(accepted.body["userId"].string == "alice")

            expectError(try await app.setStatus("alice", String(repeating: "y", count: 101)), 400, "CUSTOM_STATUS_TOO_LONG")
            // Nothing changed: not truncated, not stored, version the same.
            let after = try await app.ownStatus("alice")
            #expect(after["customStatus"].string == hundred)
            #expect(after["version"].int == 1)
        }
    }

    @Test func lengthIsCountedInUTF8Bytes() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let pair = "é🎵"  // 6 bytes
            let exact = String(repeating: pair, count: 16) + "abcd"  // 100 bytes, 36 characters
            let accepted = try await app.setStatus("alice", exact)
            #expect(accepted.status == 200)
            #expect(accepted.body["customStatus"].string == exact)
            // 34 characters, 102 bytes.
            expectError(try await app.setStatus("alice", String(repeating: pair, count: 17)), 400, "CUSTOM_STATUS_TOO_LONG")
            // 68 characters, 204 bytes.
            expectError(try await app.setStatus("alice", String(repeating: pair, count: 34)), 400, "CUSTOM_STATUS_TOO_LONG")
            // 101 bytes by one trailing byte.
            expectError(try await app.setStatus("alice", exact + "z"), 400, "CUSTOM_STATUS_TOO_LONG")
            // 25 four-byte characters are exactly 100 bytes.
            #expect(try await app.setStatus("alice", String(repeating: "🎵", count: 25)).status == 200)
            expectError(try await app.setStatus("alice", String(repeating: "🎵", count: 26)), 400, "CUSTOM_STATUS_TOO_LONG")
            let status = try await app.ownStatus("alice")
            #expect(status["customStatus"].string == String(repeating: "🎵", count: 25))
            #expect(status["version"].int == 2)
        }
    }

    @Test func emptyStringAndNullClear() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            #expect(try await app.setStatus("alice", "music").body["version"].int == 1)
            let cleared = try await app.setStatus("alice", "")
            #expect(cleared.status == 200)
            #expect(!cleared.body.has("customStatus") || cleared.body["customStatus"].isNull)
            #expect(cleared.body["version"].int == 2)
            #expect(!(try await app.ownStatus("alice")).has("customStatus"))

            #expect(try await app.setStatus("alice", "again").body["version"].int == 3)
            let nulled = try await app.setStatus("alice", nil)
            #expect(nulled.status == 200)
            #expect(nulled.body["customStatus"].string == nil)
            #expect(nulled.body["version"].int == 4)
            #expect(!(try await app.ownStatus("alice")).has("customStatus"))
        }
    }

    @Test func versionCountsChangesOnly() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            #expect(try await app.ownStatus("alice")["version"].int == 0)
            #expect(try await app.setStatus("alice", "a").body["version"].int == 1)
            #expect(try await app.setStatus("alice", "a").body["version"].int == 1)
            #expect(try await app.setStatus("alice", "b").body["version"].int == 2)
            #expect(try await app.setStatus("alice", "b").body["version"].int == 2)
            #expect(try await app.setStatus("alice", "").body["version"].int == 3)
            #expect(try await app.setStatus("alice", "").body["version"].int == 3)
            #expect(try await app.setStatus("alice", nil).body["version"].int == 3)
            #expect(try await app.ownStatus("alice")["version"].int == 3)
        }
    }

    @Test func worksForAUserWhoIsNotOnline() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            let set = try await app.setStatus("alice", "away on holiday")
            #expect(set.status == 200)
            #expect(set.body["statusType"].string == "unlogined")
            #expect(set.body["customStatus"].string == "away on holiday")
            // Stored and shown to others and to the backend.
            let seen = try await app.query("bob", ["alice"])
            #expect(seen.body["statuses"][0]["customStatus"].string == "away on holiday")
            #expect(seen.body["statuses"][0]["statusType"].string == "unlogined")
            #expect(try await app.backendStatus("alice")["customStatus"].string == "away on holiday")
            // Kept when the user comes online, cleared when the user next leaves online.
            let online = try await app.login("alice", "phone")
            #expect(online.body["customStatus"].string == "away on holiday")
            let gone = try await app.logout("alice", "phone")
            #expect(gone.body["statusType"].string == "unlogined")
            #expect(!gone.body.has("customStatus"))
        }
    }

    @Test func honoursThePatchedLimit() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await app.patchConfig(["customStatusMaxBytes": 10])
            #expect(try await app.setStatus("alice", "0123456789").status == 200)
            expectError(try await app.setStatus("alice", "0123456789a"), 400, "CUSTOM_STATUS_TOO_LONG")
            expectError(try await app.setStatus("alice", "éééééé"), 400, "CUSTOM_STATUS_TOO_LONG")
            try await app.patchConfig(["customStatusMaxBytes": 300])
            let long = String(repeating: "l", count: 300)
            #expect(try await app.setStatus("alice", long).body["customStatus"].string == long)
            expectError(try await app.setStatus("alice", long + "l"), 400, "CUSTOM_STATUS_TOO_LONG")
        }
    }

    @Test func isNeverRateLimited() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 1, "windowSeconds": 60]])
            try await app.createUsers(["alice"])
            for index in 0..<30 {
                #expect(try await app.setStatus("alice", "s\(index)").status == 200)
            }
            #expect(try await app.ownStatus("alice")["version"].int == 30)
        }
    }

    /// SPEC §4: the caller must exist. The script proves existence from the status hash's read copy and checks the
    /// profile only for a hash without one: neither a user never created nor a deleted one (whose status hash had a
    /// copy) may set a status, and the refused call writes nothing.
    @Test func aUserWhoDoesNotExistIsNotFoundAndNothingIsWritten() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            expectError(try await app.setStatus("ghost", "boo"), 404, "USER_NOT_FOUND")
            #expect(try await app.setStatus("alice", "here").status == 200)
            #expect(try await app.call(.delete, "/users/alice").status == 204)
            expectError(try await app.setStatus("alice", "back"), 404, "USER_NOT_FOUND")
            let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "set-status-test"))
            let keys = RedisKeys(appId: app.appId)
            let found = try await redis.pipeline([["EXISTS", keys.user("ghost").status], ["EXISTS", keys.user("alice").status]])
            await redis.close()
            #expect(found.map(\.int) == [0, 0])
        }
    }

    @Test func wrongTypesAreInvalidRequest() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            expectError(try await app.call(.put, "/users/alice/status", ["customStatus": 5]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.put, "/users/alice/status", ["customStatus": ["a"]]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.put, "/users/alice/status", ["customStatus": true]), 400, "INVALID_REQUEST")
            expectError(try await app.call(.put, "/users/alice/status"), 400, "INVALID_REQUEST")
            #expect(try await app.ownStatus("alice")["version"].int == 0)
        }
    }
}
