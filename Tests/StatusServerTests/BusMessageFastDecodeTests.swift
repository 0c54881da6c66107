import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// `status` messages read without `JSONDecoder` (``BusMessage/fastStatusChange(_:)``) mean what `JSONDecoder` reads:
/// over generated messages in the key orders the Lua scripts and Foundation write, and over random mutations of them,
/// the reader either declines (and `JSONDecoder` decides) or answers exactly what `JSONDecoder` answers.
@Suite struct BusMessageFastDecodeTests {
    private static let texts = ["", "a", "in class", "漢字 😀", "tab\there", "quote \" and \\ slash /", "é"]

    private static func generatedChange(_ random: inout some RandomNumberGenerator) -> StatusChange {
        func maybe<T>(_ value: @autoclosure () -> T) -> T? { Bool.random(using: &random) ? value() : nil }
        let devices = (0..<Int.random(in: 0...3, using: &random)).map { index in
            OnlineDevice(
                deviceId: "d\(index)",
                platform: Platform.allCases.randomElement(using: &random)!,
                state: DeviceState.allCases.randomElement(using: &random)!
            )
        }
        let status = UserStatus(
            userId: "u\(Int.random(in: 0...999, using: &random))",
            statusType: [StatusType.online, .offline, .unlogined].randomElement(using: &random)!,
            customStatus: maybe(texts.randomElement(using: &random)!),
            lastActiveAt: maybe(Int64.random(in: 0...1_800_000_000_000, using: &random)),
            version: Int64.random(in: 0...Int64.max, using: &random),
            onlineDevices: maybe(devices),
            availability: maybe(Availability.allCases.randomElement(using: &random)!),
            customStatusExpiresAt: maybe(Int64.random(in: -5...1_800_000_000_000, using: &random))
        )
        return StatusChange(
            appId: "app-\(Int.random(in: 0...9, using: &random))",
            change: Bool.random(using: &random) ? 1 : 2,
            role: maybe(["teacher", "student"].randomElement(using: &random)!),
            lastSeenPrivacy: maybe(LastSeenPrivacy.allCases.randomElement(using: &random)!),
            status: status,
            publicVersion: maybe(Int64.random(in: 0...1000, using: &random)),
            publicChange: Bool.random(using: &random),
            hidden: maybe(
                PresenceRecord.Hidden(
                    statusType: Bool.random(using: &random) ? .offline : .unlogined,
                    lastActiveAt: maybe(Int64.random(in: 0...1_800_000_000_000, using: &random))
                )
            ),
            autoAway: Bool.random(using: &random)
        )
    }

    /// The message as `EventBus` writes it (sorted keys) and as a writer with another key order would (Foundation's
    /// `JSONSerialization`, which also escapes `/` as the scripts' cjson does).
    private static func encodings(of change: StatusChange) throws -> [[UInt8]] {
        let sorted = Array(try JSONCoding.string(BusMessage.statusChanged(change)).utf8)
        let object = try JSONSerialization.jsonObject(with: Data(sorted))
        let unsorted = Array(try JSONSerialization.data(withJSONObject: object))
        return [sorted, unsorted]
    }

    private static func decoded(_ bytes: [UInt8]) -> BusMessage? {
        try? JSONCoding.decoder.decode(BusMessage.self, from: Data(bytes))
    }

    private static func fast(_ bytes: [UInt8]) -> StatusChange? {
        bytes.withUnsafeBytes(BusMessage.fastStatusChange)
    }

    @Test func generatedMessagesReadTheSameEitherWay() throws {
        var random = SystemRandomNumberGenerator()
        var taken = 0
        for _ in 0..<2000 {
            let change = Self.generatedChange(&random)
            for bytes in try Self.encodings(of: change) {
                let fast = Self.fast(bytes)
                #expect(Self.decoded(bytes) == .statusChanged(change))
                if let fast {
                    taken += 1
                    #expect(fast == change, "\(String(decoding: bytes, as: UTF8.self))")
                } else {
                    // Declined only for a string the plain reader does not take.
                    #expect(bytes.contains(UInt8(ascii: "\\")), "\(String(decoding: bytes, as: UTF8.self))")
                }
            }
        }
        #expect(taken > 1000)
    }

    @Test func mutatedMessagesAreDeclinedOrReadAsJSONDecoderReadsThem() throws {
        var random = SystemRandomNumberGenerator()
        let noise = Array(#"{}[]:,"\ 0123456789-+.eEtrufalsn"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xFF]
        for _ in 0..<3000 {
            var bytes = try Self.encodings(of: Self.generatedChange(&random)).randomElement(using: &random)!
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[position] = noise.randomElement(using: &random)!
                case 1: bytes.remove(at: position)
                default: bytes.insert(noise.randomElement(using: &random)!, at: position)
                }
                if bytes.isEmpty { break }
            }
            guard let fast = Self.fast(bytes) else { continue }
            #expect(Self.decoded(bytes) == .statusChanged(fast), "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test func theDocumentedMessageIsReadWithoutJSONDecoder() throws {
        let documented = #"""
            {"v":1,"type":"status","appId":"chat","change":"status","role":"teacher","lastSeenPrivacy":"friends",
             "publicVersion":12,"publicChange":true,
             "status":{"userId":"alice","statusType":"online","customStatus":"in class","customStatusExpiresAt":1763803600000,
                       "lastActiveAt":1763800000123,"availability":"busy","version":17,
                       "onlineDevices":[{"deviceId":"phone-1","platform":"ios","state":"active"}]}}
            """#
        let bytes = Array(documented.utf8)
        let fast = try #require(Self.fast(bytes))
        #expect(Self.decoded(bytes) == .statusChanged(fast))
        #expect(fast.status.onlineDevices == [OnlineDevice(deviceId: "phone-1", platform: .ios, state: .active)])
        #expect(fast.publicVersion == 12 && fast.role == "teacher" && fast.lastSeenPrivacy == .friends)
    }

    @Test func whatThePlainReaderDoesNotTakeIsLeftToJSONDecoder() {
        let base = #"{"v":1,"type":"status","appId":"a","change":"status","status":{"userId":"u","statusType":"online","version":1}}"#
        #expect(Self.fast(Array(base.utf8)) != nil)
        let declined = [
            base.replacingOccurrences(of: #""v":1"#, with: #""v":2"#),
            base.replacingOccurrences(of: #""type":"status""#, with: #""type":"config""#),
            base.replacingOccurrences(of: #""change":"status""#, with: #""change":"other""#),
            base.replacingOccurrences(of: #""userId":"u""#, with: #""userId":"\u0075""#),
            base.replacingOccurrences(of: #""version":1"#, with: #""version":1.0"#),
            base.replacingOccurrences(of: #""version":1"#, with: #""version":01"#),
            base.replacingOccurrences(of: #""version":1"#, with: #""version":99999999999999999999"#),
            base.replacingOccurrences(of: #""appId":"a","#, with: #""appId":"a","appId":"b","#),
            base.replacingOccurrences(of: #""appId":"a","#, with: #""appId":"a","extra":1,"#),
            // A member repeated in the status, a device or the hidden view.
            base.replacingOccurrences(of: #""userId":"u","#, with: #""userId":"u","userId":"w","#),
            base.replacingOccurrences(of: #""version":1}"#, with: #""version":1,"version":2}"#),
            base.replacingOccurrences(
                of: #""version":1}"#,
                with: #""version":1,"onlineDevices":[{"deviceId":"d","platform":"web","platform":"ios"}]}"#
            ),
            base.replacingOccurrences(
                of: #""change":"status","#,
                with: #""change":"status","hidden":{"statusType":"offline","statusType":"unlogined"},"#
            ),
            base + " x",
        ]
        for json in declined {
            #expect(Self.fast(Array(json.utf8)) == nil, "\(json)")
        }
        // The same members once each are read.
        let once = base.replacingOccurrences(
            of: #""change":"status","#,
            with: #""change":"status","hidden":{"statusType":"offline"},"#
        ).replacingOccurrences(of: #""version":1}"#, with: #""version":1,"onlineDevices":[{"deviceId":"d","platform":"web"}]}"#)
        #expect(Self.fast(Array(once.utf8))?.status.onlineDevices?.count == 1)
        #expect(Self.fast(Array(once.utf8))?.hidden?.statusType == .offline)
        // A privacy this version does not know is none, as JSONDecoder reads it.
        let unknownPrivacy = base.replacingOccurrences(of: #""appId":"a","#, with: #""appId":"a","lastSeenPrivacy":"later","#)
        #expect(Self.fast(Array(unknownPrivacy.utf8))?.lastSeenPrivacy == nil)
        #expect(Self.decoded(Array(unknownPrivacy.utf8)) == Self.fast(Array(unknownPrivacy.utf8)).map(BusMessage.statusChanged))
    }
}
