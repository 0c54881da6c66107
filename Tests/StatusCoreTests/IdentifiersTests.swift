import Testing

@testable import StatusCore

@Suite struct IdentifiersTests {
    static let idChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"

    @Test func appIdAcceptsItsCharsetUpTo64Chars() throws {
        #expect(Identifiers.isValidAppId("demo"))
        #expect(Identifiers.isValidAppId("a"))
        #expect(Identifiers.isValidAppId(String(Self.idChars.prefix(64))))
        #expect(Identifiers.isValidAppId(String(repeating: "x", count: 64)))
        #expect(try Identifiers.appId("My_App-1") == "My_App-1")
    }

    @Test(arguments: ["", String(repeating: "x", count: 65), "a.b", "a@b", "a b", "a/b", "é", "a:b", "a{b}", "a\n"])
    func appIdRejects(_ value: String) {
        #expect(!Identifiers.isValidAppId(value))
        #expect(throws: StatusError(.invalidUserId, "invalid appId")) { try Identifiers.appId(value) }
    }

    @Test func userIdAcceptsDotAndAtUpTo128Bytes() throws {
        #expect(Identifiers.isValidUserId("alice"))
        #expect(Identifiers.isValidUserId("alice.smith@example.com"))
        #expect(Identifiers.isValidUserId("A-Z_a-z.0-9@"))
        #expect(Identifiers.isValidUserId(String(repeating: "u", count: 128)))
        #expect(try Identifiers.userId("bob@x.io") == "bob@x.io")
    }

    @Test(arguments: ["", String(repeating: "u", count: 129), "a b", "a/b", "a:b", "a+b", "ü", "名前", "a{b", "a}b", "a\u{0}"])
    func userIdRejects(_ value: String) {
        #expect(!Identifiers.isValidUserId(value))
        #expect(throws: StatusError.self) { try Identifiers.userId(value) }
    }

    @Test func userIdLimitIsInBytesNotCharacters() {
        // 64 two-byte characters are 128 bytes but would be outside the charset anyway; the length check is on bytes.
        let almost = String(repeating: "a", count: 127)
        #expect(Identifiers.isValidUserId(almost + "b"))
        #expect(!Identifiers.isValidUserId(almost + "é"))
        #expect(!Identifiers.isValidUserId(String(repeating: "é", count: 10)))
    }

    @Test func userIdErrorIsInvalidUserId() {
        do {
            _ = try Identifiers.userId("bad id")
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .invalidUserId)
        }
    }

    @Test func deviceIdIsLikeAppId() throws {
        #expect(Identifiers.isValidDeviceId("phone-1"))
        #expect(Identifiers.isValidDeviceId(String(repeating: "d", count: 64)))
        #expect(!Identifiers.isValidDeviceId(String(repeating: "d", count: 65)))
        #expect(!Identifiers.isValidDeviceId(""))
        #expect(!Identifiers.isValidDeviceId("phone.1"))
        #expect(!Identifiers.isValidDeviceId("phone@1"))
        #expect(try Identifiers.deviceId("web_2") == "web_2")
        do {
            _ = try Identifiers.deviceId("bad device")
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .invalidUserId)
        }
    }

    @Test func listFoldsDuplicatesKeepingFirstSeenOrder() throws {
        #expect(try Identifiers.userIdList(["c", "a", "c", "b", "a", "c"]) == ["c", "a", "b"])
        #expect(try Identifiers.userIdList([]) == [])
        #expect(try Identifiers.userIdList(["x"]) == ["x"])
    }

    @Test func oneBadIdFailsTheWholeList() {
        for list in [["alice", "bad id"], ["bad id", "alice"], ["alice", "", "bob"], ["a", String(repeating: "b", count: 129)]] {
            do {
                _ = try Identifiers.userIdList(list)
                Issue.record("expected \(list) to fail")
            } catch {
                #expect(error.code == .invalidUserId)
            }
        }
    }
}

@Suite struct PercentDecodingTests {
    @Test func decodesEachEscapeOnce() {
        #expect(PercentDecoding.decode("plain") == "plain")
        #expect(PercentDecoding.decode("a%40b") == "a@b")
        #expect(PercentDecoding.decode("%61%62") == "ab")
        #expect(PercentDecoding.decode("a%2540b") == "a%40b")
        #expect(PercentDecoding.decode("a+b") == "a+b")
        #expect(PercentDecoding.decode("%C3%A9") == "é")
        #expect(PercentDecoding.decode("%c3%a9") == "é")
    }

    @Test(arguments: ["%", "a%", "a%4", "%zz", "%4g", "%FF", "%C3", "%ED%A0%80"])
    func refusesMalformedEscapesAndNonUTF8(_ value: String) {
        #expect(PercentDecoding.decode(value) == nil)
    }

    @Test func pathSegmentsAreDecodedThenValidated() throws {
        #expect(try Identifiers.userId(pathSegment: "a%40b") == "a@b")
        #expect(try Identifiers.appId(pathSegment: "my%5Fapp") == "my_app")
        #expect(try Identifiers.deviceId(pathSegment: "d%2D1") == "d-1")
        #expect(throws: StatusError.self) { try Identifiers.userId(pathSegment: "a%zz") }
        #expect(throws: StatusError.self) { try Identifiers.appId(pathSegment: "a%40b") }
        #expect(throws: StatusError.self) { try Identifiers.userId(pathSegment: "a%2540b") }
    }
}
