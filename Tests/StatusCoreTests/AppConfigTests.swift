import Foundation
import Testing

@testable import StatusCore

private func json(_ text: String) throws -> JSONValue {
    try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
}

private func patchError(_ text: String, to config: AppConfig = AppConfig()) throws -> StatusError? {
    let patch = try json(text)
    do {
        _ = try AppConfigPatch.apply(patch, to: config)
        return nil
    } catch {
        return error
    }
}

@Suite struct AppConfigDefaultsTests {
    @Test func defaultsAreThoseOfSpecSection3() {
        let config = AppConfig()
        #expect(config.plan == .basic)
        #expect(config.statusQuery == false)
        #expect(config.friendStatusNotify == false)
        #expect(config.multiDeviceSync == true)
        #expect(config.customStatusMaxBytes == 100)
        #expect(config.subscriptionLimit == 200)
        #expect(config.subscribeBatchLimit == 100)
        #expect(config.queryBatchLimit == 500)
        #expect(config.rateLimit == AppConfig.RateLimit(calls: 20, windowSeconds: 5))
        #expect(config.heartbeatTimeoutSeconds == 400)
        #expect(config.subscriptionRetentionSeconds == 86_400)
        #expect(config.webhook == nil)
        #expect(config.maxDevicesPerUser == 10)
        #expect(config.loginPolicy == .multi)
        #expect(config.lastSeenPrivacy == .everyone)
    }

    @Test func aConfigStoredBeforeAFlagExistedDecodesWithItsDefault() throws {
        let stored = #"{"plan":"premium","statusQuery":true,"webhook":null}"#
        let config = try JSONDecoder().decode(AppConfig.self, from: Data(stored.utf8))
        #expect(config.plan == .premium && config.statusQuery)
        #expect(config.maxDevicesPerUser == 10)
        #expect(config.heartbeatTimeoutSeconds == 400)
        #expect(config.loginPolicy == .multi)
        #expect(config.lastSeenPrivacy == .everyone)
    }

    @Test func encodingHasEveryFlagAndWebhookNull() throws {
        let encoded = try json(String(decoding: try JSONEncoder().encode(AppConfig()), as: UTF8.self))
        guard case .object(let fields) = encoded else {
            Issue.record("not an object")
            return
        }
        #expect(
            Set(fields.keys) == [
                "plan", "statusQuery", "friendStatusNotify", "multiDeviceSync", "customStatusMaxBytes", "subscriptionLimit",
                "subscribeBatchLimit", "queryBatchLimit", "rateLimit", "heartbeatTimeoutSeconds", "subscriptionRetentionSeconds",
                "webhook", "maxDevicesPerUser", "loginPolicy", "lastSeenPrivacy", "allowedOrigins", "connectRateLimit",
                "offlineGraceSeconds",
            ]
        )
        #expect(fields["webhook"] == .null)
        #expect(fields["allowedOrigins"] == .null)
        #expect(fields["plan"] == .string("basic"))
        #expect(fields["loginPolicy"] == .string("multi"))
        #expect(fields["lastSeenPrivacy"] == .string("everyone"))
        #expect(fields["rateLimit"] == .object(["calls": .int(20), "windowSeconds": .int(5)]))
    }

    @Test func encodingRoundTrips() throws {
        var config = AppConfig()
        config.plan = .premium
        config.webhook = AppConfig.Webhook(url: "https://example.com/hook", secret: "s")
        config.rateLimit = AppConfig.RateLimit(calls: 3, windowSeconds: 2)
        let decoded = try JSONDecoder().decode(AppConfig.self, from: try JSONEncoder().encode(config))
        #expect(decoded == config)
    }

    @Test func heartbeatIntervalIsBelowTheTimeout() {
        var config = AppConfig()
        for timeout in [5, 6, 30, 400, 3600] {
            config.heartbeatTimeoutSeconds = timeout
            #expect(config.heartbeatIntervalSeconds >= 1)
            #expect(config.heartbeatIntervalSeconds < timeout)
        }
    }
}

@Suite struct RequireStatusQueryTests {
    private func code(_ config: AppConfig) -> StatusError.Code? {
        do {
            try config.requireStatusQuery()
            return nil
        } catch {
            return error.code
        }
    }

    @Test func basicPlanIsPlanNotSupportedBeforeFeatureDisabled() {
        var config = AppConfig()
        #expect(code(config) == .planNotSupported)
        config.statusQuery = true
        #expect(code(config) == .planNotSupported)
        #expect(!config.allowsStatusQuery)
    }

    @Test func premiumWithSwitchOffIsFeatureDisabled() {
        var config = AppConfig()
        config.plan = .premium
        #expect(code(config) == .featureDisabled)
        #expect(!config.allowsStatusQuery)
    }

    @Test func premiumWithSwitchOnPasses() {
        var config = AppConfig()
        config.plan = .premium
        config.statusQuery = true
        #expect(code(config) == nil)
        #expect(config.allowsStatusQuery)
    }

    @Test func gatingErrorsAre403() {
        #expect(StatusError.Code.planNotSupported.httpStatus == 403)
        #expect(StatusError.Code.featureDisabled.httpStatus == 403)
    }
}

@Suite struct AppConfigPatchTests {
    @Test func emptyPatchKeepsEverything() throws {
        #expect(try AppConfigPatch.apply(try json("{}"), to: AppConfig()) == AppConfig())
    }

    @Test func validPartialPatchKeepsOtherFields() throws {
        var start = AppConfig()
        start.queryBatchLimit = 42
        let patched = try AppConfigPatch.apply(try json(#"{"plan": "premium", "statusQuery": true}"#), to: start)
        var expected = start
        expected.plan = .premium
        expected.statusQuery = true
        #expect(patched == expected)
        #expect(patched.queryBatchLimit == 42)
    }

    @Test func everyFlagCanBePatched() throws {
        let patch = try json(
            """
            {"plan": "premium", "statusQuery": true, "friendStatusNotify": true, "multiDeviceSync": false,
             "customStatusMaxBytes": 10, "subscriptionLimit": 3, "subscribeBatchLimit": 4, "queryBatchLimit": 5,
             "rateLimit": {"calls": 6, "windowSeconds": 7}, "heartbeatTimeoutSeconds": 5,
             "subscriptionRetentionSeconds": 60, "webhook": {"url": "https://example.com/h", "secret": "k"},
             "allowedOrigins": ["https://app.example.com"], "loginPolicy": "singlePerPlatform", "lastSeenPrivacy": "friends",
             "offlineGraceSeconds": 15}
            """
        )
        let config = try AppConfigPatch.apply(patch, to: AppConfig())
        #expect(config.loginPolicy == .singlePerPlatform)
        #expect(config.lastSeenPrivacy == .friends)
        #expect(config.allowedOrigins == ["https://app.example.com"])
        #expect(config.plan == .premium)
        #expect(config.statusQuery)
        #expect(config.friendStatusNotify)
        #expect(!config.multiDeviceSync)
        #expect(config.customStatusMaxBytes == 10)
        #expect(config.subscriptionLimit == 3)
        #expect(config.subscribeBatchLimit == 4)
        #expect(config.queryBatchLimit == 5)
        #expect(config.rateLimit == AppConfig.RateLimit(calls: 6, windowSeconds: 7))
        #expect(config.heartbeatTimeoutSeconds == 5)
        #expect(config.subscriptionRetentionSeconds == 60)
        #expect(config.webhook == AppConfig.Webhook(url: "https://example.com/h", secret: "k"))
        #expect(config.offlineGraceSeconds == 15)
    }

    @Test func partialRateLimitKeepsTheOtherField() throws {
        let config = try AppConfigPatch.apply(try json(#"{"rateLimit": {"calls": 3}}"#), to: AppConfig())
        #expect(config.rateLimit == AppConfig.RateLimit(calls: 3, windowSeconds: 5))
    }

    @Test func webhookNullClearsIt() throws {
        var start = AppConfig()
        start.webhook = AppConfig.Webhook(url: "http://x", secret: "s")
        #expect(try AppConfigPatch.apply(try json(#"{"webhook": null}"#), to: start).webhook == nil)
    }

    @Test(
        arguments: [
            #"{"plan": "gold"}"#,
            #"{"plan": 1}"#,
            #"{"plan": null}"#,
            #"{"statusQuery": 1}"#,
            #"{"statusQuery": "true"}"#,
            #"{"statusQuery": null}"#,
            #"{"multiDeviceSync": 0}"#,
            #"{"friendStatusNotify": "yes"}"#,
            #"{"customStatusMaxBytes": true}"#,
            #"{"customStatusMaxBytes": -1}"#,
            #"{"customStatusMaxBytes": 1.5}"#,
            #"{"customStatusMaxBytes": "100"}"#,
            #"{"subscriptionLimit": -5}"#,
            #"{"subscribeBatchLimit": 0}"#,
            #"{"queryBatchLimit": -1}"#,
            #"{"queryBatchLimit": false}"#,
            #"{"heartbeatTimeoutSeconds": 4}"#,
            #"{"heartbeatTimeoutSeconds": 0}"#,
            #"{"heartbeatTimeoutSeconds": -400}"#,
            #"{"subscriptionRetentionSeconds": -1}"#,
            #"{"rateLimit": {"calls": -1}}"#,
            #"{"rateLimit": {"calls": 0}}"#,
            #"{"rateLimit": {"windowSeconds": true}}"#,
            #"{"rateLimit": {"burst": 3}}"#,
            #"{"rateLimit": 20}"#,
            #"{"webhook": "https://example.com"}"#,
            #"{"webhook": {"url": "https://example.com"}}"#,
            #"{"webhook": {"url": "ftp://example.com", "secret": "s"}}"#,
            #"{"webhook": {"url": "https://example.com", "secret": ""}}"#,
            #"{"webhook": {"url": "https://example.com", "secret": "s", "extra": 1}}"#,
            #"{"unknownFlag": true}"#,
            #"{"loginPolicy": "singlePerDevice"}"#,
            #"{"loginPolicy": "Single"}"#,
            #"{"loginPolicy": null}"#,
            #"{"loginPolicy": 1}"#,
            #"{"lastSeenPrivacy": "strangers"}"#,
            #"{"lastSeenPrivacy": null}"#,
            #"{"lastSeenPrivacy": true}"#,
            #"{"offlineGraceSeconds": -1}"#,
            #"{"offlineGraceSeconds": 301}"#,
            #"{"offlineGraceSeconds": 1.5}"#,
            #"{"offlineGraceSeconds": null}"#,
            #"{"offlineGraceSeconds": "10"}"#,
            #"[]"#,
            #""premium""#,
            #"null"#,
        ]
    )
    func invalidPatchIsInvalidRequest(_ text: String) throws {
        #expect(try patchError(text)?.code == .invalidRequest)
    }

    @Test func invalidPatchAppliesNothing() throws {
        // Valid fields next to an invalid one: the whole patch is rejected, whatever the key order.
        let start = AppConfig()
        for text in [
            #"{"plan": "premium", "statusQuery": true, "queryBatchLimit": -1}"#,
            #"{"queryBatchLimit": 7, "heartbeatTimeoutSeconds": 4}"#,
            #"{"statusQuery": true, "bogus": 1}"#,
            #"{"loginPolicy": "single", "lastSeenPrivacy": "friend"}"#,
            #"{"plan": "premium", "rateLimit": {"calls": 1, "windowSeconds": 0}}"#,
        ] {
            let patch = try json(text)
            var config = start
            do {
                config = try AppConfigPatch.apply(patch, to: start)
                Issue.record("expected \(text) to be rejected")
            } catch {
                #expect(error.code == .invalidRequest)
            }
            #expect(config == start)
        }
    }

    @Test func boundaryValuesAreAccepted() throws {
        let config = try AppConfigPatch.apply(
            try json(#"{"heartbeatTimeoutSeconds": 5, "rateLimit": {"calls": 1, "windowSeconds": 1}, "subscribeBatchLimit": 1}"#),
            to: AppConfig()
        )
        #expect(try AppConfigPatch.apply(try json(#"{"offlineGraceSeconds": 300}"#), to: AppConfig()).offlineGraceSeconds == 300)
        #expect(try AppConfigPatch.apply(try json(#"{"offlineGraceSeconds": 0}"#), to: AppConfig()).offlineGraceSeconds == 0)
        #expect(config.heartbeatTimeoutSeconds == 5)
        #expect(config.rateLimit == AppConfig.RateLimit(calls: 1, windowSeconds: 1))
        #expect(config.subscribeBatchLimit == 1)
    }
}

@Suite struct AllowedOriginsRuleTests {
    @Test func originsAreComparedAsBrowsersSendThem() {
        #expect(AllowedOrigins.normalized("HTTPS://App.Example.com/") == "https://app.example.com")
        #expect(AllowedOrigins.normalized("http://localhost:3000") == "http://localhost:3000")
        #expect(AllowedOrigins.normalized("http://[::1]:8080") == "http://[::1]:8080")
        for bad in [
            "null", "", "app.example.com", "ftp://a.example", "https://a.example/x", "https://u@a.example", "https://a.example:0",
            "https://a.example:65536", "https://a.example:080", "https://exämple.com", "https://a b", "https://[zz]", "https://",
        ] {
            #expect(AllowedOrigins.normalized(bad) == nil, "\(bad)")
        }
    }

    @Test func absentListOrAbsentHeaderAdmitsAndOtherwiseTheOriginMustBeListed() {
        #expect(AllowedOrigins.admits(["https://any.example"], allowed: nil))
        #expect(AllowedOrigins.admits([], allowed: []))
        #expect(!AllowedOrigins.admits(["https://any.example"], allowed: []))
        #expect(AllowedOrigins.admits(["https://A.example"], allowed: ["https://a.example"]))
        #expect(!AllowedOrigins.admits(["http://a.example"], allowed: ["https://a.example"]))
        #expect(!AllowedOrigins.admits(["garbage"], allowed: ["https://a.example"]))
        #expect(!AllowedOrigins.admits(["null"], allowed: ["https://a.example"]))
        // What some WebSocket libraries send (their own target) is no browser's origin.
        #expect(AllowedOrigins.admits(["ws://127.0.0.1"], allowed: ["https://a.example"]))
        #expect(!AllowedOrigins.admits(["ws://127.0.0.1", "https://b.example"], allowed: ["https://a.example"]))
    }

    @Test func integralNumbersAreIntegersInAPatch() throws {
        let config = try AppConfigPatch.apply(try json(#"{"maxDevicesPerUser": 5.0}"#), to: AppConfig())
        #expect(config.maxDevicesPerUser == 5)
        #expect(throws: StatusError.self) { try AppConfigPatch.apply(try json(#"{"maxDevicesPerUser": 5.5}"#), to: AppConfig()) }
    }
}
