import Foundation
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// The direct reading of a stored device record gives what `JSONDecoder` gives, for every record the scripts write and
/// for what they do not: a shape it does not take goes to `JSONDecoder`, never to a different answer.
@Suite struct DeviceRecordFastDecodeTests {
    private func viaJSONDecoder(_ text: String) -> DeviceRecord? {
        try? JSONCoding.decoder.decode(DeviceRecord.self, from: Data(text.utf8))
    }

    private func fast(_ text: String) -> DeviceRecord? {
        Array(text.utf8).withUnsafeBytes(DeviceRecord.fastDecode)
    }

    @Test func theScriptsRecordsAreReadAsJSONDecoderReadsThem() {
        let records = [
            #"{"p":"ios","n":"node-1","c":"conn-1","k":"ws"}"#,
            #"{"c":"c9","k":"api","n":"","p":"web","hb":1764240000123,"ct":1764240000000,"s":"background"}"#,
            #"{ "p" : "android" , "n":"n","c":"c","k":"ws","ct":-5 }"#,
            #"{"p":"mac","n":"n","c":"c","k":"ws","x":"unknown member","y":7}"#,
            #"{"p":"ios","n":"nöde","c":"c","k":"ws","s":"idle"}"#,
        ]
        for text in records {
            let expected = viaJSONDecoder(text)
            #expect(expected != nil, "\(text)")
            #expect(fast(text) == expected, "\(text)")
            #expect(DeviceRecord.decode(.bulkString(Array(text.utf8))) == expected, "\(text)")
        }
    }

    @Test func whatItDoesNotTakeGoesToJSONDecoder() {
        let others = [
            #"{"p":"i\"os","n":"n","c":"c","k":"ws"}"#,  // an escape
            #"{"p":"ios","n":"n","c":"c","k":"ws","hb":1.5}"#,  // a fraction
            #"{"p":"ios","n":"n","c":"c","k":"ws","hb":1e3}"#,  // an exponent
            #"{"p":"ios","n":"n","c":"c","k":"ws","z":{"a":1}}"#,  // a nested value
            #"{"p":"ios","n":"n","c":"c","k":"ws","z":true}"#,  // a literal
            #"{"p":"ios","n":"n","c":"c"}"#,  // a member missing
            #"{"p":"ios","n":"n","c":"c","k":"tcp"}"#,  // an unknown kind
            #"{"p":"ios","n":"n","c":"c","k":"ws","s":"asleep"}"#,  // an unknown state
            #"{"p":1,"n":"n","c":"c","k":"ws"}"#,  // a member of another type
            #"{"p":"ios","n":"n","c":"c","k":"ws","p":"web"}"#,  // a member repeated
            #"{"p":"ios","n":"n","c":"c","k":"ws","hb":1,"hb":2}"#,  // a member repeated
            #"{"p":"ios","n":"n","c":"c","k":"ws"} x"#,  // something after the object
            #"{"p":"ios","n":"n","c":"c","k":"ws""#,  // cut short
            #"[1]"#, "", "{}", "{",
        ]
        for text in others {
            #expect(fast(text) == nil, "\(text)")
            #expect(DeviceRecord.decode(.bulkString(Array(text.utf8))) == viaJSONDecoder(text), "\(text)")
        }
        // What JSONDecoder reads of those, the record still gives.
        #expect(DeviceRecord.decode(.bulkString(Array(#"{"p":"i\"os","n":"n","c":"c","k":"ws"}"#.utf8)))?.platform == #"i"os"#)
        #expect(DeviceRecord.decode(.null) == nil)
    }

    @Test func randomRecordsAgreeWithJSONDecoder() throws {
        var generator = SystemRandomNumberGenerator()
        let platforms = ["ios", "android", "web", "mac", "windows"]
        for _ in 0..<500 {
            var record = DeviceRecord(
                platform: platforms.randomElement(using: &generator)!,
                node: "node-\(Int.random(in: 0..<100, using: &generator))",
                connection: UUID().uuidString,
                kind: Bool.random(using: &generator) ? .webSocket : .backend
            )
            if Bool.random(using: &generator) { record.heartbeat = Int64.random(in: 0..<2_000_000_000_000, using: &generator) }
            if Bool.random(using: &generator) { record.connectedAt = Int64.random(in: 0..<2_000_000_000_000, using: &generator) }
            if Bool.random(using: &generator) { record.state = DeviceState.allCases.randomElement(using: &generator) }
            let text = try JSONCoding.string(record)
            #expect(fast(text) == record, "\(text)")
            // The connect writes the record without JSONEncoder, in the same bytes.
            #expect(String(decoding: record.jsonBytes, as: UTF8.self) == text)
        }
    }
}
