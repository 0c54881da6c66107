import Foundation
import Testing

@testable import StatusCore

@Suite struct PresenceScopeTests {
    @Test func parsesTheNamedScopes() throws {
        #expect(try PresenceScope.parse(nil) == .subscriptions)
        #expect(try PresenceScope.parse("subscriptions") == .subscriptions)
        #expect(try PresenceScope.parse("friends") == .friends)
        #expect(try PresenceScope.parse("all") == .all)
    }

    @Test func parsesRoles() throws {
        #expect(try PresenceScope.parse("roles:admin") == .roles(["admin"]))
        #expect(try PresenceScope.parse("roles:admin,moderator") == .roles(["admin", "moderator"]))
        #expect(try PresenceScope.parse("roles:a,a") == .roles(["a"]))
    }

    @Test(arguments: ["", "everyone", "ALL", "Friends", "roles:", "roles", "roles:a,", "roles:,a", "roles:a,,b", "role:admin"])
    func rejectsAnythingElseAsInvalidRequest(_ value: String) {
        do {
            _ = try PresenceScope.parse(value)
            Issue.record("expected \(value) to be rejected")
        } catch {
            #expect(error.code == .invalidRequest)
        }
    }
}

@Suite struct PlatformTests {
    @Test func parsesEveryPlatformOfTheSpec() throws {
        for name in ["ios", "android", "ipad", "web", "windows", "macos", "linux", "other"] {
            #expect(try Platform.parse(name).rawValue == name)
        }
        #expect(Platform.allCases.count == 8)
    }

    @Test(arguments: ["", "iOS", "IOS", "mac", "blackberry", " web", "web "])
    func rejectsOthersAsInvalidRequest(_ value: String) {
        do {
            _ = try Platform.parse(value)
            Issue.record("expected \(value) to be rejected")
        } catch {
            #expect(error.code == .invalidRequest)
        }
    }
}

@Suite struct StatusErrorTests {
    @Test func httpStatusesFollowTheErrorTable() {
        let table: [(StatusError.Code, String, Int)] = [
            (.invalidRequest, "INVALID_REQUEST", 400),
            (.invalidUserId, "INVALID_USER_ID", 400),
            (.customStatusTooLong, "CUSTOM_STATUS_TOO_LONG", 400),
            (.tooManyUsers, "TOO_MANY_USERS", 400),
            (.invalidLimit, "INVALID_LIMIT", 400),
            (.unauthorized, "UNAUTHORIZED", 401),
            (.forbidden, "FORBIDDEN", 403),
            (.planNotSupported, "PLAN_NOT_SUPPORTED", 403),
            (.featureDisabled, "FEATURE_DISABLED", 403),
            (.userNotFound, "USER_NOT_FOUND", 404),
            (.appNotFound, "APP_NOT_FOUND", 404),
            (.appExists, "APP_EXISTS", 409),
            (.payloadTooLarge, "PAYLOAD_TOO_LARGE", 413),
            (.rateLimited, "RATE_LIMITED", 429),
            (.unavailable, "UNAVAILABLE", 503),
            (.cannotSubscribeSelf, "CANNOT_SUBSCRIBE_SELF", 400),
        ]
        for (code, raw, status) in table {
            #expect(code.rawValue == raw)
            #expect(code.httpStatus == status, "\(raw)")
        }
    }

    @Test func retryAfterSecondsRoundsUp() {
        let cases: [(Int64, Int64)] = [(1, 1), (999, 1), (1000, 1), (1001, 2), (1999, 2), (2000, 2), (2001, 3), (4500, 5)]
        for (milliseconds, seconds) in cases {
            #expect(StatusError(.rateLimited, "x", retryAfterMs: milliseconds).retryAfterSeconds == seconds, "\(milliseconds) ms")
        }
    }

    @Test func retryAfterSecondsIsAtLeastOne() {
        #expect(StatusError(.rateLimited, "x", retryAfterMs: 0).retryAfterSeconds == 1)
    }

    @Test func noRetryAfterWithoutRetryAfterMs() {
        #expect(StatusError(.invalidRequest, "x").retryAfterSeconds == nil)
        #expect(StatusError(.invalidRequest, "x").retryAfterMs == nil)
    }

    @Test func descriptionHasCodeAndMessage() {
        #expect(StatusError(.userNotFound, "user x not found").description == "USER_NOT_FOUND: user x not found")
    }
}

@Suite struct UserStatusTests {
    @Test func withoutDevicesDropsOnlyTheDeviceList() {
        let status = UserStatus(
            userId: "a",
            statusType: .online,
            customStatus: "c",
            lastActiveAt: 5,
            version: 2,
            onlineDevices: [OnlineDevice(deviceId: "d", platform: .web)]
        )
        let bare = status.withoutDevices()
        #expect(bare.onlineDevices == nil)
        #expect(bare.customStatus == "c")
        #expect(bare.lastActiveAt == 5)
        #expect(bare.version == 2)
        #expect(bare.statusType == .online)
    }

    @Test func encodesTheSpecShapeWithoutAbsentFields() throws {
        let status = UserStatus(userId: "alice", statusType: .unlogined, version: 0, onlineDevices: nil)
        let object = try JSONDecoder().decode(JSONValue.self, from: try JSONEncoder().encode(status))
        #expect(object == .object(["userId": .string("alice"), "statusType": .string("unlogined"), "version": .int(0)]))
    }

    @Test func statusTypeRawValues() {
        #expect(StatusType.online.rawValue == "online")
        #expect(StatusType.offline.rawValue == "offline")
        #expect(StatusType.unlogined.rawValue == "unlogined")
    }
}

@Suite struct JSONValueTests {
    private func decode(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    @Test func numbersAreNeverBooleansAndBooleansNeverNumbers() throws {
        #expect(try decode("1") == .int(1))
        #expect(try decode("0") == .int(0))
        #expect(try decode("true") == .bool(true))
        #expect(try decode("false") == .bool(false))
    }

    @Test func decodesEveryKind() throws {
        #expect(try decode("null") == .null)
        #expect(try decode("-42") == .int(-42))
        #expect(try decode("1.5") == .double(1.5))
        #expect(try decode(#""hi""#) == .string("hi"))
        #expect(try decode(#"[1, "a", null, true]"#) == .array([.int(1), .string("a"), .null, .bool(true)]))
        #expect(try decode(#"{"a": {"b": [false]}}"#) == .object(["a": .object(["b": .array([.bool(false)])])]))
    }

    @Test func nonIntegralNumbersAreNotInts() throws {
        #expect(try decode("2.5") != .int(2))
        if case .int = try? decode("1e400") { Issue.record("1e400 is not an int") }
    }

    @Test func malformedJSONThrows() {
        #expect(throws: (any Error).self) { try decode("{") }
        #expect(throws: (any Error).self) { try decode("{'a': 1}") }
    }

    @Test func roundTrips() throws {
        let value: JSONValue = .object([
            "s": .string("é🎵"), "i": .int(7), "d": .double(0.25), "b": .bool(true), "n": .null, "a": .array([.int(1)]),
        ])
        #expect(try JSONDecoder().decode(JSONValue.self, from: try JSONEncoder().encode(value)) == value)
    }
}
