import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// The fast paths of hot request bodies (``JSONFastPath``) against `JSONDecoder`: over generated bodies (plain and
/// escaped strings, JSON and non-JSON whitespace, truncations, flipped bytes, other members, invalid UTF-8), a fast
/// path either declines (the body then goes to `JSONDecoder`) or gives exactly what `JSONDecoder` gives; and it does
/// take the plain shapes the routes receive.
@Suite struct JSONFastPathTests {
    private static let idAlphabet: [String] = ["a", "Z", "0", "_", "-", ".", "é", "漢", "😀", " ", "\"", "\\", "/", "\n", "\u{1}", "\u{2028}"]
    private static let whitespace: [String] = ["", "", "", " ", "\n", "\t", "\r\n", "  ", "\u{0B}", "\u{A0}"]

    private static func string(_ generator: inout some RandomNumberGenerator) -> String {
        (0..<Int.random(in: 0...8, using: &generator)).map { _ in idAlphabet.randomElement(using: &generator)! }.joined()
    }

    /// A JSON string literal for `value`: written plainly when it needs no escape, else by `JSONEncoder` (escapes).
    private static func literal(_ value: String, _ generator: inout some RandomNumberGenerator) -> String {
        let plain = !value.contains("\"") && !value.contains("\\") && !value.unicodeScalars.contains(where: { $0.value < 0x20 })
        if plain && Bool.random(using: &generator) { return "\"\(value)\"" }
        return String(decoding: try! JSONEncoder().encode(value), as: UTF8.self)
    }

    private static func space(_ generator: inout some RandomNumberGenerator) -> String {
        whitespace.randomElement(using: &generator)!
    }

    /// A body of roughly the route's shape, often exactly it, sometimes damaged.
    private static func userIdsBody(_ generator: inout some RandomNumberGenerator) -> [UInt8] {
        let w = (0..<10).map { _ in space(&generator) }
        let ids = (0..<Int.random(in: 0...4, using: &generator)).map { _ in literal(string(&generator), &generator) }
        var members = [w[0] + "\"userIds\"" + w[1] + ":" + w[2] + "[" + w[3] + ids.joined(separator: w[4] + "," + w[5]) + w[6] + "]" + w[7]]
        switch Int.random(in: 0..<8, using: &generator) {
        case 0: members.append("\"extra\":1")
        case 1: members.insert("\"userIds\":[\"x\"]", at: 0)
        case 2: members[0] = members[0].replacingOccurrences(of: "\"userIds\"", with: "\"userids\"")
        default: break
        }
        var body = Array((w[8] + "{" + members.joined(separator: ",") + "}" + w[9]).utf8)
        damage(&body, &generator)
        return body
    }

    private static func setStatusBody(_ generator: inout some RandomNumberGenerator) -> [UInt8] {
        let w = (0..<8).map { _ in space(&generator) }
        let value: String
        switch Int.random(in: 0..<6, using: &generator) {
        case 0: value = "null"
        case 1: value = "17"
        default: value = literal(string(&generator), &generator)
        }
        var text: String
        switch Int.random(in: 0..<8, using: &generator) {
        case 0: text = w[0] + "{" + w[1] + "}" + w[2]
        case 1: text = "{\"customStatus\":" + value + ",\"other\":true}"
        case 2: text = "{\"customstatus\":" + value + "}"
        default: text = w[0] + "{" + w[1] + "\"customStatus\"" + w[2] + ":" + w[3] + value + w[4] + "}" + w[5]
        }
        var body = Array(text.utf8)
        damage(&body, &generator)
        return body
    }

    /// Now and then: cut the body short, flip a byte, or put invalid UTF-8 in it.
    private static func damage(_ body: inout [UInt8], _ generator: inout some RandomNumberGenerator) {
        guard !body.isEmpty else { return }
        switch Int.random(in: 0..<10, using: &generator) {
        case 0: body.removeLast(Int.random(in: 1...body.count, using: &generator))
        case 1: body[Int.random(in: 0..<body.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
        case 2: body.insert(contentsOf: [0xED, 0xA0, 0x80], at: Int.random(in: 0...body.count, using: &generator))
        default: break
        }
    }

    @Test func userIdListsAreWhatJSONDecoderReadsOrDeclined() throws {
        var generator = SystemRandomNumberGenerator()
        var taken = 0
        for _ in 0..<20_000 {
            let body = Self.userIdsBody(&generator)
            let fast = body.withUnsafeBytes { UserIdList.fastDecode($0) }
            let slow = try? JSONDecoder().decode(UserIdList.self, from: Data(body))
            if let fast {
                taken += 1
                #expect(fast.userIds == slow?.userIds, "\(String(decoding: body, as: UTF8.self))")
                #expect(Self.strictlyValid(body, UserIdList.members), "\(String(decoding: body, as: UTF8.self))")
            }
        }
        #expect(taken > 200)
        let plain = Array(#"{"userIds":["bob","carol","漢字"]}"#.utf8)
        #expect(plain.withUnsafeBytes { UserIdList.fastDecode($0) }?.userIds == ["bob", "carol", "漢字"])
        #expect(Array(#"{"userIds":[]}"#.utf8).withUnsafeBytes { UserIdList.fastDecode($0) }?.userIds == [])
    }

    @Test func statusBodiesAreWhatJSONDecoderReadsOrDeclined() throws {
        var generator = SystemRandomNumberGenerator()
        var taken = 0
        for _ in 0..<20_000 {
            let body = Self.setStatusBody(&generator)
            let fast = body.withUnsafeBytes { StatusRoutes.SetStatus.fastDecode($0) }
            let slow = try? JSONDecoder().decode(StatusRoutes.SetStatus.self, from: Data(body))
            if let fast {
                taken += 1
                #expect(slow != nil, "\(String(decoding: body, as: UTF8.self))")
                #expect(fast.customStatus == slow?.customStatus, "\(String(decoding: body, as: UTF8.self))")
                #expect(Self.strictlyValid(body, StatusRoutes.SetStatus.members), "\(String(decoding: body, as: UTF8.self))")
            }
        }
        #expect(taken > 200)
        let busy = Array(#"{"customStatus":"in a meeting"}"#.utf8).withUnsafeBytes { StatusRoutes.SetStatus.fastDecode($0) }
        #expect(busy?.customStatus == .set("in a meeting"))
        let cleared = Array(#"{"customStatus":null}"#.utf8).withUnsafeBytes { StatusRoutes.SetStatus.fastDecode($0) }
        #expect(cleared?.customStatus == .set(nil))
        let kept = Array(#"{ }"#.utf8).withUnsafeBytes { StatusRoutes.SetStatus.fastDecode($0) }
        #expect(kept?.customStatus == .keep)
    }

    /// The fast paths run after the strict check, and take nothing it refuses.
    private static func strictlyValid(_ body: [UInt8], _ members: StrictJSON.Members?) -> Bool {
        body.withUnsafeBytes { bytes in (try? StrictJSON.validate(bytes, members: members)) != nil }
    }
}
