import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// A status read is one `HMGET` of the status hash, which carries a read copy of the profile's role and last-seen
/// privacy and of the devices (`lib.lua` `status_reply`). These tests check that every write keeps the copy right,
/// and that a status hash written by an earlier version (no copy) still reads right and gets its copy.
@Suite(.redis) struct StatusReadCopyTests {
    private func copy(_ redis: RedisClient, _ appId: String, _ userId: String) async throws -> [String: String] {
        let status = RedisKeys(appId: appId).user(userId).status
        let values = try await redis.send("HMGET", status, "pc", "pr", "pp", "dp").array ?? []
        var copy: [String: String] = [:]
        for (field, value) in zip(["pc", "pr", "pp", "dp"], values) { copy[field] = value.string }
        return copy
    }

    @Test func profileAndDeviceWritesKeepTheCopy() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "read-copy-test"))
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            expectOK(try await app.call(.put, "/users/bob", ["role": "vip", "lastSeenPrivacy": "nobody"]))
            var copy = try await self.copy(redis, app.appId, "bob")
            #expect(copy["pc"] != nil)
            #expect(copy["pr"] == "vip")
            #expect(copy["pp"] == "nobody")
            #expect(copy["dp"] == "")

            expectOK(try await app.login("bob", "phone", platform: "ios"))
            expectOK(try await app.login("bob", "desk", platform: "macos"))
            copy = try await self.copy(redis, app.appId, "bob")
            #expect(Set((copy["dp"] ?? "").split(separator: " ").map(String.init)) == ["phone", "ios", "desk", "macos"])

            // A profile replaced without role or privacy drops them from the copy too.
            expectOK(try await app.call(.put, "/users/bob", ["name": "Bob"]))
            copy = try await self.copy(redis, app.appId, "bob")
            #expect(copy["pr"] == nil)
            #expect(copy["pp"] == nil)
            #expect(copy["dp"]?.isEmpty == false)

            expectOK(try await app.logout("bob", "phone"))
            #expect(try await self.copy(redis, app.appId, "bob")["dp"] == "desk macos")
            expectOK(try await app.logout("bob", "desk"))
            #expect(try await self.copy(redis, app.appId, "bob")["dp"] == "")
        }
        await redis.close()
    }

    @Test func aStatusHashWithoutTheCopyReadsRightAndGetsIt() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "read-copy-test"))
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            expectOK(try await app.call(.put, "/users/bob", ["role": "vip", "lastSeenPrivacy": "nobody"]))
            expectOK(try await app.login("bob", "phone", platform: "android"))
            expectOK(try await app.call(.put, "/users/carol", [:]))
            // What an earlier version left: the status hash without the copy.
            let keys = RedisKeys(appId: app.appId)
            for user in ["bob", "carol"] {
                _ = try await redis.send("HDEL", keys.user(user).status, "pc", "pr", "pp", "dp")
            }

            let response = try await app.query("alice", ["bob", "carol", "nobody"])
            #expect(response.status == 200)
            let statuses = response.body["statuses"].array
            #expect(statuses.map { $0["userId"].string } == ["bob", "carol"])
            #expect(statuses[0]["statusType"] == "online")
            #expect(statuses[0]["onlineDevices"] == [["deviceId": "phone", "platform": "android", "state": "active"]])
            #expect(!statuses[0].has("lastActiveAt"))  // bob's privacy, read through the script
            #expect(statuses[1]["statusType"] == "unlogined")
            #expect(response.body["failures"] == [["userId": "nobody", "code": "USER_NOT_FOUND"]])

            // The read wrote the copy; nothing was written for a user that does not exist.
            let copy = try await self.copy(redis, app.appId, "bob")
            #expect(copy["pr"] == "vip")
            #expect(copy["pp"] == "nobody")
            #expect(copy["dp"] == "phone android")
            #expect(try await self.copy(redis, app.appId, "carol")["pc"] != nil)
            #expect(try await redis.send("EXISTS", keys.user("nobody").status).int == 0)

            // The next read is the plain one and answers the same.
            let again = try await app.query("alice", ["bob", "carol", "nobody"])
            #expect(again.body == response.body)
        }
        await redis.close()
    }

    @Test func writesThatReadTheCopyAnswerFromItAndFillAMissingOne() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "read-copy-test"))
        try await withStatusd { api in
            let app = try await api.createApp(config: premiumConfig)
            expectOK(try await app.call(.put, "/users/bob", ["role": "vip"]))
            expectOK(try await app.login("bob", "phone", platform: "ios"))
            expectOK(try await app.login("bob", "desk", platform: "linux"))
            let devices: JSONValue = [
                ["deviceId": "desk", "platform": "linux", "state": "active"], ["deviceId": "phone", "platform": "ios", "state": "active"],
            ]
            // setSelfStatus reads the devices from the copy.
            let set = try await app.call(.put, "/users/bob/status", ["customStatus": "busy"])
            #expect(set.status == 200)
            #expect(set.body["onlineDevices"] == devices)
            // Without a copy (an earlier version's hash) it reads them from the devices and writes the copy.
            _ = try await redis.send("HDEL", RedisKeys(appId: app.appId).user("bob").status, "pc", "pr", "pp", "dp")
            let again = try await app.call(.put, "/users/bob/status", ["customStatus": "away"])
            #expect(again.status == 200)
            #expect(again.body["onlineDevices"] == devices)
            let copy = try await self.copy(redis, app.appId, "bob")
            #expect(copy["pc"] != nil)
            #expect(copy["pr"] == "vip")
            #expect(Set((copy["dp"] ?? "").split(separator: " ").map(String.init)) == ["phone", "ios", "desk", "linux"])
        }
        await redis.close()
    }

    @Test func devicesOfTheCopyAreParsedInOrderAndUnknownPlatformsSkipped() {
        let devices = StatusRepository.onlineDevices(Array("z web a ios m martian b android".utf8))
        let expected = [
            OnlineDevice(deviceId: "a", platform: .ios),
            OnlineDevice(deviceId: "b", platform: .android),
            OnlineDevice(deviceId: "z", platform: .web),
        ]
        #expect(devices == expected)
        #expect(StatusRepository.onlineDevices([]).isEmpty)
    }

    /// SPEC §10.4: a device that is not active carries its state after its platform (`lib.lua` `device_word`); a state
    /// this version does not know skips the device as an unknown platform does.
    @Test func devicesOfTheCopyCarryTheirState() {
        let devices = StatusRepository.onlineDevices(Array("p ios:idle w web d linux:background x web:asleep y :idle".utf8))
        let expected = [
            OnlineDevice(deviceId: "d", platform: .linux, state: .background),
            OnlineDevice(deviceId: "p", platform: .ios, state: .idle),
            OnlineDevice(deviceId: "w", platform: .web, state: .active),
        ]
        #expect(devices == expected)
    }
}
