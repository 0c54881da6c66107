import Foundation
import StatusdClient
import Testing

import struct StatusServer.ServerConfiguration

/// The client's closed sets of values stay open (a newer server's new platform or error code decodes), and a config
/// patch can clear the webhook and the allowed origins with an explicit null.
@Suite struct StatusdClientOpenValuesTests {
    @Test func aStatusWithValuesThisClientDoesNotKnowDecodes() throws {
        let json = #"""
            {"userId": "bob", "statusType": "lurking", "availability": "brb", "version": 3,
             "onlineDevices": [{"deviceId": "tv-1", "platform": "tvos", "state": "dozing"},
                               {"deviceId": "phone-1", "platform": "ios", "state": "active"}]}
            """#
        let status = try JSONDecoder().decode(UserStatus.self, from: Data(json.utf8))
        let devices = try #require(status.onlineDevices)
        #expect(devices.map(\.platform) == ["tvos", .ios])
        #expect(devices[0].platform.rawValue == "tvos" && !devices[0].platform.isKnown)
        #expect(devices[1].platform == .ios && devices[1].platform.isKnown)
        #expect(devices[0].state.rawValue == "dozing" && !devices[0].state.isKnown)
        #expect(status.statusType.rawValue == "lurking" && status.availability?.rawValue == "brb")
        // Written back as it came.
        let again = try JSONDecoder().decode(UserStatus.self, from: JSONEncoder().encode(status))
        #expect(again == status)
    }

    @Test func anErrorCodeThisClientDoesNotKnowDecodes() throws {
        let json = #"{"statuses": [], "failures": [{"userId": "carol", "code": "USER_ON_VACATION"}, {"userId": "dan", "code": "USER_NOT_FOUND"}]}"#
        let result = try JSONDecoder().decode(StatusQueryResult.self, from: Data(json.utf8))
        #expect(result.failures.map(\.code) == ["USER_ON_VACATION", .userNotFound])
        #expect(!result.failures[0].code.isKnown && result.failures[1].code.isKnown)
        let body = try JSONDecoder().decode(
            Components.Schemas.ErrorBody.self,
            from: Data(#"{"error": {"code": "QUOTA_EXHAUSTED", "message": "later"}}"#.utf8)
        )
        #expect(body.error.code.rawValue == "QUOTA_EXHAUSTED")
    }

    @Test func aPatchWritesNullOnlyForWhatItClears() throws {
        func members(_ patch: AppConfigPatch) throws -> [String: Any] {
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(patch)) as? [String: Any] ?? [:]
        }
        #expect(try members(AppConfigPatch()).isEmpty, "nil members are left out: they keep the config's values")
        let cleared = try members(AppConfigPatch(webhook: .off, allowedOrigins: .anyOrigin))
        #expect(cleared.keys.sorted() == ["allowedOrigins", "webhook"])
        #expect(cleared["webhook"] is NSNull && cleared["allowedOrigins"] is NSNull)
        let set = try members(
            AppConfigPatch(webhook: .on(url: "https://hooks.example.com/s", secret: "k"), allowedOrigins: .only(["https://a.example"]))
        )
        #expect((set["webhook"] as? [String: String]) == ["url": "https://hooks.example.com/s", "secret": "k"])
        #expect((set["allowedOrigins"] as? [String]) == ["https://a.example"])
    }

}

/// `patchAppConfig` with an explicit null, against a live node.
@Suite(.redis) struct StatusdClientConfigPatchTests {
    @Test func patchAppConfigClearsTheWebhookAndTheAllowedOriginsWithNull() async throws {
        let shortIdle: (inout ServerConfiguration) -> Void = { $0.httpIdleTimeoutSeconds = 1 }
        try await withStatusd(.live, configure: shortIdle) { api in
            let admin = try api.adminFacade()
            let appId = "n" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
            _ = try await admin.createApp(appId)
            let set = try await admin.patchAppConfig(
                appId,
                AppConfigPatch(
                    webhook: .on(url: "https://hooks.example.com/statusd", secret: "s3cret"),
                    allowedOrigins: .only(["https://app.example.com"])
                )
            )
            #expect(set.webhook == .on(url: "https://hooks.example.com/statusd", secret: "s3cret"))
            #expect(set.allowedOrigins == .only(["https://app.example.com"]))
            // A patch without them keeps them.
            let kept = try await admin.patchAppConfig(appId, AppConfigPatch(friendStatusNotify: true))
            #expect(kept.webhook != nil && kept.allowedOrigins == .only(["https://app.example.com"]))

            let cleared = try await admin.patchAppConfig(appId, AppConfigPatch(webhook: .off, allowedOrigins: .anyOrigin))
            #expect(cleared.webhook == nil || cleared.webhook == .off)
            #expect(cleared.allowedOrigins == nil || cleared.allowedOrigins == .anyOrigin)
            let read = try await admin.getApp(appId).config
            #expect(read.webhook == nil || read.webhook == .off)
            #expect(read.allowedOrigins == nil || read.allowedOrigins == .anyOrigin)
            #expect(read.friendStatusNotify)
            try await admin.deleteApp(appId)
        }
    }
}
