import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// The hand-written JSON of the hot paths against Foundation: what ``JSONOutput`` writes decodes with `JSONDecoder` to
/// the value it was written from, for generated strings full of what JSON must escape, and is byte for byte what
/// `JSONEncoder` (sorted keys, slashes unescaped) gives for the same value.
@Suite struct JSONOutputTests {
    /// Strings built from the characters that matter to a JSON writer: every control character, quote, backslash,
    /// slash, DEL, Latin-1, U+2028/2029, CJK, emoji with modifiers and joiners, and a replacement character (what an
    /// invalid surrogate or invalid UTF-8 becomes in a Swift string).
    private static let alphabet: [String] =
        (0..<0x20).map { String(UnicodeScalar(UInt8($0))) } + [
            "\"", "\\", "/", "\u{7F}", "a", "Z", "0", " ", "é", "ß", "\u{2028}", "\u{2029}", "漢", "字", "😀", "👩🏽‍💻", "🇫🇷",
            "\u{FFFD}", "\u{10FFFF}", "\u{FEFF}", "{", "}", "[", "]", ":", ",",
        ]

    private static func generatedString(_ generator: inout some RandomNumberGenerator) -> String {
        let length = Int.random(in: 0...24, using: &generator)
        return (0..<length).map { _ in alphabet.randomElement(using: &generator)! }.joined()
    }

    @Test func stringsRoundTripThroughJSONDecoder() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            let value = Self.generatedString(&generator)
            var output = JSONOutput()
            output.string(value)
            let decoded = try JSONDecoder().decode(String.self, from: Data(output.bytes))
            #expect(decoded == value, "\(Array(value.unicodeScalars))")
        }
    }

    @Test func invalidUTF8BecomesReplacementCharactersNotBrokenJSON() throws {
        let invalid = String(decoding: [0x61, 0xED, 0xA0, 0x80, 0x62, 0xFF], as: UTF8.self)
        var output = JSONOutput()
        output.string(invalid)
        #expect(try JSONDecoder().decode(String.self, from: Data(output.bytes)) == invalid)
    }

    @Test func integersMatchTheirDecimalForm() throws {
        for value: Int64 in [0, 1, -1, 9, 10, 1_763_800_000_123, .max, .min] {
            var output = JSONOutput()
            output.integer(value)
            #expect(String(decoding: output.bytes, as: UTF8.self) == String(value))
        }
    }

    @Test func statusObjectsAreWhatJSONEncoderWrites() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<2000 {
            let devices = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                OnlineDevice(deviceId: Self.generatedString(&generator), platform: Platform.allCases.randomElement(using: &generator)!)
            }
            let status = UserStatus(
                userId: Self.generatedString(&generator),
                statusType: [.online, .offline, .unlogined].randomElement(using: &generator)!,
                customStatus: round % 3 == 0 ? nil : Self.generatedString(&generator),
                lastActiveAt: round % 4 == 0 ? nil : Int64.random(in: 0...2_000_000_000_000, using: &generator),
                version: Int64.random(in: 0...1_000_000, using: &generator),
                onlineDevices: round % 5 == 0 ? nil : devices,
                availability: round % 6 == 0 ? nil : Availability.allCases.randomElement(using: &generator),
                customStatusExpiresAt: round % 7 == 0 ? nil : Int64.random(in: 0...2_000_000_000_000, using: &generator)
            )
            #expect(try JSONDecoder().decode(UserStatus.self, from: Data(status.jsonBytes)) == status)
            #expect(String(decoding: status.jsonBytes, as: UTF8.self) == (try JSONCoding.string(status)))
        }
    }

    @Test func welcomeFramesAreWhatJSONEncoderWrites() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<500 {
            let status = UserStatus(
                userId: Self.generatedString(&generator),
                statusType: .online,
                customStatus: round % 2 == 0 ? nil : Self.generatedString(&generator),
                lastActiveAt: Int64.random(in: 0...2_000_000_000_000, using: &generator),
                version: Int64.random(in: 0...1_000_000, using: &generator),
                onlineDevices: [OnlineDevice(deviceId: Self.generatedString(&generator), platform: .web)]
            )
            let welcome = DeviceFrames.Welcome(
                userId: status.userId,
                deviceId: Self.generatedString(&generator),
                heartbeatSeconds: Int.random(in: 1...3600, using: &generator),
                status: status,
                resume: Self.generatedString(&generator)
            )
            #expect(String(decoding: welcome.jsonBytes, as: UTF8.self) == (try JSONCoding.string(welcome)))
        }
    }

    @Test func queryResultsAreWhatJSONEncoderWrites() throws {
        let result = StatusQueryResult(
            statuses: [
                UserStatus(userId: "a", statusType: .online, customStatus: "in a \"meeting\"\n", lastActiveAt: 17, version: 3),
                UserStatus(userId: "b", statusType: .unlogined, onlineDevices: nil),
            ],
            failures: [UserFailure(userId: "zed", code: .userNotFound)]
        )
        #expect(String(decoding: result.jsonBytes, as: UTF8.self) == (try JSONCoding.string(result)))
        let empty = StatusQueryResult(statuses: [], failures: [])
        #expect(String(decoding: empty.jsonBytes, as: UTF8.self) == #"{"failures":[],"statuses":[]}"#)
    }

    /// A socket's answer to setSelfStatus, written by hand, is what `JSONEncoder` writes for every kind of id.
    @Test func aSocketAnswerCarryingAStatusIsWhatJSONEncoderWrites() throws {
        var generator = SystemRandomNumberGenerator()
        let status = UserStatus(userId: "u\"1", statusType: .online, customStatus: "a\nb", lastActiveAt: 7, version: 3, onlineDevices: [])
        var ids: [JSONValue] = [.int(0), .int(-42), .int(Int64.max), .null, .bool(true), .double(1.5), .array([.int(1)]), .object(["a": .null])]
        for _ in 0..<200 { ids.append(.string(Self.generatedString(&generator))) }
        for id in ids {
            let written = try DeviceFrames.success(id: id, result: status)
            #expect(written == (try JSONCoding.string(DeviceFrames.Success(id: id, result: status))), "\(id)")
        }
    }

    @Test func snapshotAndStatusFramesAreWhatJSONEncoderWrites() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<300 {
            let statuses = (0..<Int.random(in: 0...5, using: &generator)).map { index in
                UserStatus(
                    userId: Self.generatedString(&generator),
                    statusType: [.online, .offline, .unlogined].randomElement(using: &generator)!,
                    customStatus: index % 2 == 0 ? nil : Self.generatedString(&generator),
                    lastActiveAt: index % 3 == 0 ? nil : Int64.random(in: 0...2_000_000_000_000, using: &generator),
                    version: Int64.random(in: 0...1_000_000, using: &generator),
                    onlineDevices: index % 4 == 0 ? nil : [OnlineDevice(deviceId: Self.generatedString(&generator), platform: .ios)]
                )
            }
            let truncated: Bool? = [nil, true, false][round % 3]
            let snapshot = DeviceFrames.Snapshot(statuses: statuses, truncated: truncated)
            #expect(String(decoding: snapshot.jsonBytes, as: UTF8.self) == (try JSONCoding.string(snapshot)))
            let changed = DeviceFrames.StatusChanged(statuses: statuses, truncated: truncated)
            #expect(String(decoding: changed.jsonBytes, as: UTF8.self) == (try JSONCoding.string(changed)))
        }
    }

    @Test func loginRulesAreWhatJSONEncoderWrites() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<300 {
            var rules = StatusRepository.LoginRules(
                maxDevices: Int.random(in: 1...100, using: &generator),
                policy: LoginPolicy.allCases.randomElement(using: &generator)!,
                platform: Platform.allCases.randomElement(using: &generator)!,
                connectLimit: round % 2 == 0 ? nil : AppConfig.RateLimit(calls: Int.random(in: 1...100, using: &generator), windowSeconds: 5)
            )
            if round % 5 == 0 { rules.kickPlatforms = [Self.generatedString(&generator), Self.generatedString(&generator)] }
            #expect(String(decoding: rules.jsonBytes, as: UTF8.self) == (try JSONCoding.string(rules)))
        }
    }
}
