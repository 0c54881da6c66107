import Foundation
import Hummingbird
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §3 and §7 admin API.
@Suite(.redis) struct AdminAPITests {
    static let defaultConfig: JSONValue = [
        "plan": "basic", "statusQuery": false, "friendStatusNotify": false, "multiDeviceSync": true, "customStatusMaxBytes": 100,
        "subscriptionLimit": 200, "subscribeBatchLimit": 100, "queryBatchLimit": 500, "rateLimit": ["calls": 20, "windowSeconds": 5],
        "heartbeatTimeoutSeconds": 400, "subscriptionRetentionSeconds": 86_400, "webhook": nil, "maxDevicesPerUser": 10, "allowedOrigins": nil,
        "loginPolicy": "multi", "lastSeenPrivacy": "everyone", "connectRateLimit": ["calls": 30, "windowSeconds": 60],
        "offlineGraceSeconds": 0,
    ]

    static func freshAppId() -> String {
        "a" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
    }

    @Test func createReturns201WithKeyAndDefaultConfig() async throws {
        try await withStatusd { api in
            let appId = Self.freshAppId()
            let response = try await api.admin(.post, "/v1/apps", ["appId": .string(appId)])
            #expect(response.status == 201, "\(response.body)")
            #expect(response.body["appId"].string == appId)
            #expect(response.body["apiKey"].string?.isEmpty == false)
            #expect(response.body["config"] == Self.defaultConfig)
            let fetched = try await api.admin(.get, "/v1/apps/\(appId)")
            #expect(fetched.status == 200)
            #expect(fetched.body == ["appId": .string(appId), "config": Self.defaultConfig])
            #expect(!fetched.body.has("apiKey"))
        }
    }

    @Test func createWithPartialConfigKeepsTheOtherDefaults() async throws {
        try await withStatusd { api in
            let appId = Self.freshAppId()
            let response = try await api.admin(
                .post,
                "/v1/apps",
                ["appId": .string(appId), "config": ["plan": "premium", "rateLimit": ["calls": 3]]]
            )
            #expect(response.status == 201)
            var expected = Self.defaultConfig
            if case .object(var fields) = expected {
                fields["plan"] = "premium"
                fields["rateLimit"] = ["calls": 3, "windowSeconds": 5]
                expected = .object(fields)
            }
            #expect(response.body["config"] == expected)
        }
    }

    @Test func createWithInvalidConfigIsRejectedAndCreatesNothing() async throws {
        try await withStatusd { api in
            let appId = Self.freshAppId()
            let response = try await api.admin(.post, "/v1/apps", ["appId": .string(appId), "config": ["plan": "gold"]])
            expectError(response, 400, "INVALID_REQUEST")
            expectError(try await api.admin(.get, "/v1/apps/\(appId)"), 404, "APP_NOT_FOUND")
        }
    }

    @Test func createTwiceIsAppExists() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let again = try await api.admin(.post, "/v1/apps", ["appId": .string(app.appId), "config": premiumConfig])
            expectError(again, 409, "APP_EXISTS")
            // The first app is untouched: its key still works and its config did not change.
            try await app.createUsers(["alice"])
            #expect(try await api.admin(.get, "/v1/apps/\(app.appId)").body["config"]["plan"].string == "basic")
        }
    }

    @Test func badAppIdIsInvalidUserId() async throws {
        try await withStatusd { api in
            for appId in ["", "bad.id", "bad id", "a@b", String(repeating: "x", count: 65)] {
                expectError(try await api.admin(.post, "/v1/apps", ["appId": .string(appId)]), 400, "INVALID_USER_ID")
            }
            let ok = try await api.admin(.post, "/v1/apps", ["appId": .string(String(repeating: "y", count: 60) + "_-Z9")])
            #expect(ok.status == 201 || ok.status == 409)
            expectError(try await api.admin(.get, "/v1/apps/bad.id"), 400, "INVALID_USER_ID")
            expectError(try await api.admin(.patch, "/v1/apps/bad.id/config", ["plan": "premium"]), 400, "INVALID_USER_ID")
            expectError(try await api.admin(.delete, "/v1/apps/bad.id"), 400, "INVALID_USER_ID")
        }
    }

    @Test func missingBodyOrAppIdIsInvalidRequest() async throws {
        try await withStatusd { api in
            expectError(try await api.raw(.post, "/v1/apps", key: api.adminKey), 400, "INVALID_REQUEST")
            expectError(try await api.admin(.post, "/v1/apps", ["config": [:]]), 400, "INVALID_REQUEST")
            expectError(try await api.admin(.post, "/v1/apps", ["appId": 5]), 400, "INVALID_REQUEST")
        }
    }

    @Test func unknownAppIsAppNotFound() async throws {
        try await withStatusd { api in
            let appId = Self.freshAppId()
            expectError(try await api.admin(.get, "/v1/apps/\(appId)"), 404, "APP_NOT_FOUND")
            expectError(try await api.admin(.patch, "/v1/apps/\(appId)/config", ["plan": "premium"]), 404, "APP_NOT_FOUND")
            expectError(try await api.admin(.delete, "/v1/apps/\(appId)"), 404, "APP_NOT_FOUND")
        }
    }

    @Test func patchIsPartialAndAnswersTheFullConfig() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["queryBatchLimit": 7])
            let response = try await api.admin(.patch, "/v1/apps/\(app.appId)/config", ["plan": "premium", "statusQuery": true])
            #expect(response.status == 200)
            var expected = Self.defaultConfig
            if case .object(var fields) = expected {
                fields["plan"] = "premium"
                fields["statusQuery"] = true
                fields["queryBatchLimit"] = 7
                expected = .object(fields)
            }
            #expect(response.body == expected)
            #expect(try await api.admin(.get, "/v1/apps/\(app.appId)").body["config"] == expected)
            let webhook = try await app.patchConfig(["webhook": ["url": "https://example.com/hook", "secret": "s3cret"]])
            #expect(webhook["webhook"] == ["url": "https://example.com/hook", "secret": "s3cret"])
            #expect(webhook["plan"].string == "premium")
            #expect(try await app.patchConfig(["webhook": nil])["webhook"].isNull)
        }
    }

    @Test func patchTakesEffectWithoutRestart() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice", "bob"])
            expectError(try await app.query("alice", ["bob"]), 403, "PLAN_NOT_SUPPORTED")
            try await app.patchConfig(["plan": "premium"])
            expectError(try await app.query("alice", ["bob"]), 403, "FEATURE_DISABLED")
            try await app.patchConfig(["statusQuery": true])
            #expect(try await app.query("alice", ["bob"]).status == 200)
            try await app.patchConfig(["statusQuery": false])
            expectError(try await app.query("alice", ["bob"]), 403, "FEATURE_DISABLED")
        }
    }

    @Test func invalidPatchChangesNothing() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: ["rateLimit": ["calls": 9, "windowSeconds": 3]])
            let before = try await api.admin(.get, "/v1/apps/\(app.appId)").body
            let invalid: [JSONValue] = [
                ["plan": "premium", "statusQuery": true, "queryBatchLimit": -1],
                ["plan": "platinum"],
                ["statusQuery": 1],
                ["multiDeviceSync": "yes"],
                ["customStatusMaxBytes": true],
                ["subscriptionLimit": -1],
                ["heartbeatTimeoutSeconds": 4],
                ["statusQuery": true, "noSuchFlag": true],
                ["rateLimit": ["calls": 1, "windowSeconds": -2]],
                ["webhook": "https://example.com"],
                ["webhook": ["url": "https://example.com"]],
                "premium",
                [1, 2],
            ]
            for patch in invalid {
                let response = try await api.admin(.patch, "/v1/apps/\(app.appId)/config", patch)
                expectError(response, 400, "INVALID_REQUEST")
            }
            expectError(try await api.raw(.patch, "/v1/apps/\(app.appId)/config", key: api.adminKey, body: "{\"plan\": "), 400, "INVALID_REQUEST")
            #expect(try await api.admin(.get, "/v1/apps/\(app.appId)").body == before)
        }
    }

    @Test func deleteRemovesTheAppAndAllItsData() async throws {
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice", "bob"])
            #expect(try await app.setStatus("alice", "here").status == 200)
            #expect(try await app.subscribe("alice", ["bob"]).status == 200)
            #expect(try await app.call(.put, "/users/alice/friends", ["userIds": ["bob"]]).status == 200)
            #expect(try await app.login("bob", "phone").status == 200)

            let deleted = try await api.admin(.delete, "/v1/apps/\(app.appId)")
            #expect(deleted.status == 204)
            expectError(try await api.admin(.get, "/v1/apps/\(app.appId)"), 404, "APP_NOT_FOUND")
            // The old key no longer works.
            expectError(try await app.call(.get, "/users/alice"), 401, "UNAUTHORIZED")
            expectError(try await app.query("alice", ["alice"]), 401, "UNAUTHORIZED")
            // A new app of the same id starts empty: none of the old users, statuses or relations remain.
            let created = try await api.admin(.post, "/v1/apps", ["appId": .string(app.appId), "config": premiumConfig])
            #expect(created.status == 201)
            var fresh = app
            fresh.apiKey = created.body["apiKey"].string ?? ""
            expectError(try await fresh.call(.get, "/users/alice"), 404, "USER_NOT_FOUND")
            expectError(try await fresh.call(.get, "/users/bob"), 404, "USER_NOT_FOUND")
            #expect(try await fresh.call(.get, "/users?status=online").body["users"].array.isEmpty)
            #expect(try await fresh.call(.get, "/users?status=offline").body["users"].array.isEmpty)
            try await fresh.createUsers(["alice", "bob"])
            let alice = try await fresh.ownStatus("alice")
            #expect(alice["statusType"].string == "unlogined")
            #expect(!alice.has("customStatus"))
            #expect(alice["version"].int == 0)
            #expect(try await fresh.subscriptions("alice").isEmpty)
            #expect(try await fresh.call(.get, "/users/alice/friends").body["userIds"].strings.isEmpty)
            #expect(try await fresh.backendStatus("bob")["statusType"].string == "unlogined")
        }
    }

    @Test func adminKeyIsRequired() async throws {
        try await withStatusd { api in
            let app = try await api.createApp()
            let newId = Self.freshAppId()
            let requests: [(HTTPRequest.Method, String, String?)] = [
                (.post, "/v1/apps", "{\"appId\": \"\(newId)\"}"),
                (.get, "/v1/apps/\(app.appId)", nil),
                (.patch, "/v1/apps/\(app.appId)/config", "{\"plan\": \"premium\"}"),
                (.delete, "/v1/apps/\(app.appId)", nil),
            ]
            for (method, path, body) in requests {
                for key in [nil, "wrong", app.apiKey, api.adminKey + "x"] as [String?] {
                    expectError(try await api.raw(method, path, key: key, body: body), 401, "UNAUTHORIZED")
                }
            }
            // Nothing happened.
            expectError(try await api.admin(.get, "/v1/apps/\(newId)"), 404, "APP_NOT_FOUND")
            #expect(try await api.admin(.get, "/v1/apps/\(app.appId)").body["config"]["plan"].string == "basic")
        }
    }
}
