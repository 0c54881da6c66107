import Foundation
import Testing

@testable import StatusCore

/// SPEC §1 presence scope `roles:`: 1–32 roles of 1–64 chars `A-Z a-z 0-9 _ - .`.
@Suite struct PresenceScopeLimitsTests {
    @Test func acceptsUpTo32RolesOfUpTo64AllowedChars() throws {
        let roles = (0..<32).map { "r\($0)" }
        #expect(try PresenceScope.parse("roles:" + roles.joined(separator: ",")) == .roles(Set(roles)))
        let long = String(repeating: "a", count: 64)
        #expect(try PresenceScope.parse("roles:\(long)") == .roles([long]))
        #expect(try PresenceScope.parse("roles:team.lead,A-Z_09") == .roles(["team.lead", "A-Z_09"]))
    }

    @Test(arguments: [
        "roles:" + (0..<33).map { "r\($0)" }.joined(separator: ","),
        "roles:" + String(repeating: "a", count: 65),
        "roles:a b", "roles:a:b", "roles:a/b", "roles:é", "roles:a*", "roles:a%2Cb", "roles:a\u{0}",
    ])
    func rejectsRolesPastTheLimits(_ value: String) {
        do {
            _ = try PresenceScope.parse(value)
            Issue.record("expected \(value.prefix(80)) to be rejected")
        } catch {
            #expect(error.code == .invalidRequest)
        }
    }
}

/// Nesting is bounded before decoding (within the strict scan, ``StrictJSONTests``), and decoding ``JSONValue`` is
/// linear in the depth.
@Suite struct JSONNestingTests {
    @Test func decodesDeepValuesInLinearTime() throws {
        let depth = 60
        let text = String(repeating: "{\"a\":[", count: depth / 2) + "1" + String(repeating: "]}", count: depth / 2)
        let start = ContinuousClock.now
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(ContinuousClock.now - start < .seconds(1))
        #expect(value.depth == depth)
        let tooDeep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        let refusedAt = ContinuousClock.now
        #expect(throws: (any Error).self) { try JSONDecoder().decode(JSONValue.self, from: Data(tooDeep.utf8)) }
        #expect(ContinuousClock.now - refusedAt < .seconds(1))
    }

    @Test func decodesEveryKindStrictly() throws {
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(#"{"n": null, "b": true, "i": 3, "d": 1.5, "s": "x", "a": [false]}"#.utf8))
        #expect(value == .object(["n": .null, "b": .bool(true), "i": .int(3), "d": .double(1.5), "s": .string("x"), "a": .array([.bool(false)])]))
    }
}
