import Foundation
import Testing

@testable import StatusCore

/// ``StrictJSON``: RFC 8259 in UTF-8, exactly, from bytes; the nesting bound; the members of the top-level object.
@Suite struct StrictJSONTests {
    private static func isValid(_ bytes: [UInt8], maxDepth: Int = StrictJSON.maxBodyDepth, members: [String]? = nil) -> Bool {
        bytes.withUnsafeBytes { (try? StrictJSON.validate($0, maxDepth: maxDepth, members: members.map(StrictJSON.Members.init))) != nil }
    }

    private static func error(_ text: String, members: [String]? = nil) -> StatusError? {
        Array(text.utf8).withUnsafeBytes { bytes -> StatusError? in
            do throws(StatusError) {
                try StrictJSON.validate(bytes, members: members.map(StrictJSON.Members.init))
                return nil
            } catch {
                return error
            }
        }
    }

    @Test(arguments: [
        "{}", "[]", "0", "-0", "1.5e10", "-1E-2", "2e+3", "123456789012345678901234567890", #""x""#, "true", "false", "null",
        #" {"a" : [1, 2.0, "s", null, true, false, {}, []]} "#, "\t\r\n[ ]\n", #"{"a":{"b":{"c":[[["d"]]]}}}"#,
        #""\"\\\/\b\f\n\r\t\u0041\u00e9\uFFFF""#, #""\uD83D\uDE00""#, #""\ud83d\ude00""#, #""é漢😀""#, #"{"":""}"#,
    ])
    func acceptsValidJSON(_ text: String) {
        #expect(Self.isValid(Array(text.utf8)), "\(text)")
    }

    @Test(arguments: [
        // Structure.
        #"{"userIds": ["u2",]}"#, #"{"a":1,}"#, "[,]", "{,}", "[1 2]", #"{"a" 1}"#, #"{"a":}"#, "{a:1}", "{'a':1}", #"{"a":1}}"#,
        "[1]]", #"{"a":1} x"#, "{} {}", "", "  ", "[", "{", #"{"a""#, #"{"a":"#, "[1,", "]", "}", ":", ",", "[1,,2]", #"{"a":1,,"b":2}"#,
        #"{"a":1 "b":2}"#, #"{"a"::1}"#, #"[1:2]"#, #"{1:2}"#, #"{null:1}"#,
        // Numbers.
        "01", "-01", "00", "-", "1.", ".5", "+1", "1e", "1e+", "1E-", "0x10", "NaN", "Infinity", "-Infinity", "1.e5", "1..2", "--1", "1e5.5",
        "[01]", #"{"a":-}"#,
        // Literals.
        "tru", "nul", "True", "NULL", "nulll", "falsey", "[truefalse]",
        // Strings: unterminated, invalid escapes, lone surrogates.
        #""abc"#, #""\x41""#, #""\u12""#, #""\u12G4""#, #""\'""#, #""\""#, #""\uD83D""#, #""\uD83Dx""#, #""\uD83D\u0041""#,
        #""\uDE00""#, #""\uD83D\uD83D""#, #""\U0041""#, #""\ "#,
    ])
    func refusesMalformedJSON(_ text: String) {
        #expect(!Self.isValid(Array(text.utf8)), "\(text)")
        #expect(Self.error(text)?.code == .invalidRequest)
    }

    @Test func refusesControlCharactersInStrings() {
        for byte: UInt8 in [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F] {
            #expect(!Self.isValid(Array(#"{"a":"x"#.utf8) + [byte] + Array(#"y"}"#.utf8)), "\(byte)")
        }
        #expect(Self.isValid(Array(#"{"a":"x"#.utf8) + [0x7F] + Array(#"y"}"#.utf8)))
    }

    @Test func refusesEverythingButWellFormedUTF8() {
        let bad: [[UInt8]] = [
            [0xFF], [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0xF0, 0x80, 0x80, 0x80], [0xE6, 0xBC], [0x80], [0xC3], [0xC3, 0x41], [0xF0, 0x9F, 0x98],
        ]
        for sequence in bad {
            #expect(!Self.isValid(Array(#"{"a":""#.utf8) + sequence + Array(#""}"#.utf8)), "\(sequence)")
        }
        let good: [[UInt8]] = [
            [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80], [0xF0, 0x90, 0x80, 0x80],
            [0xF4, 0x8F, 0xBF, 0xBF],
        ]
        for sequence in good {
            #expect(Self.isValid(Array(#"{"a":""#.utf8) + sequence + Array(#""}"#.utf8)), "\(sequence)")
        }
        // Outside strings any byte past ASCII is an error.
        #expect(!Self.isValid([0xC3, 0xA9]))
    }

    @Test func refusesOtherEncodingsAndByteOrderMarks() {
        let text = #"{"userIds":["a"]}"#
        #expect(Self.isValid(Array(text.utf8)))
        #expect(!Self.isValid([0xEF, 0xBB, 0xBF] + Array(text.utf8)))
        for encoding: String.Encoding in [.utf16LittleEndian, .utf16BigEndian, .utf16, .utf32LittleEndian, .utf32BigEndian, .utf32] {
            #expect(!Self.isValid(Array(text.data(using: encoding)!)), "\(encoding)")
        }
    }

    @Test func boundsNestingWithoutRecursion() {
        let levels = StrictJSON.maxBodyDepth
        #expect(Self.isValid(Array((String(repeating: "[", count: levels) + String(repeating: "]", count: levels)).utf8)))
        #expect(!Self.isValid(Array((String(repeating: "[", count: levels + 1) + String(repeating: "]", count: levels + 1)).utf8)))
        #expect(Self.isValid(Array((String(repeating: #"{"a":"#, count: 64) + "1" + String(repeating: "}", count: 64)).utf8), maxDepth: 64))
        #expect(!Self.isValid(Array((String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65)).utf8), maxDepth: 64))
        // Brackets inside strings do not count.
        #expect(Self.isValid(Array(#"{"a": "[[[[{{{{\"[[["}"#.utf8), maxDepth: 1))
        // Mismatched closers.
        #expect(!Self.isValid(Array("[}".utf8)))
        #expect(!Self.isValid(Array(#"{"a":[1}]"#.utf8)))
        let deep = Array((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
        let start = ContinuousClock.now
        #expect(!Self.isValid(deep))
        #expect(ContinuousClock.now - start < .milliseconds(100))
    }

    @Test func refusesJunkInsideMembersNobodyReads() {
        #expect(!Self.isValid(Array(#"{"userIds":["a"],"metadata":{"x":[1,]}}"#.utf8)))
        #expect(!Self.isValid(Array(#"{"name":"a","metadata":{"x":01}}"#.utf8)))
    }

    @Test func checksTheTopLevelMembers() {
        let members = ["customStatus", "availability"]
        #expect(Self.error(#"{"customStatus":"x"}"#, members: members) == nil)
        #expect(Self.error(#"{"customStatus":"x","availability":"busy"}"#, members: members) == nil)
        #expect(Self.error("{}", members: members) == nil)
        let unknown = Self.error(#"{"customStatsu":"x"}"#, members: members)
        #expect(unknown?.code == .invalidRequest)
        #expect(unknown?.message.contains("customStatsu") == true)
        #expect(Self.error(#"{"customStatus":"x","customStatus":"y"}"#, members: members)?.code == .invalidRequest)
        // Names are compared unescaped.
        #expect(Self.error(#"{"custom\u0053tatus":"x"}"#, members: members) == nil)
        #expect(Self.error(#"{"custom\u0053tatus":"x","customStatus":"y"}"#, members: members)?.code == .invalidRequest)
        #expect(Self.error(#"{"\u00e9":1}"#, members: ["é"]) == nil)
        #expect(Self.error(#"{"\ud83d\ude00":1}"#, members: ["😀"]) == nil)
        // Only the top level: members of nested objects are the decoder's business.
        #expect(Self.error(#"{"customStatus":"x","availability":{"anything":[{"goes":1}]}}"#, members: members) == nil)
        #expect(Self.error(#"[{"other":1}]"#, members: members) == nil)
        #expect(Self.error(#"{"deviceId":"d1"}"#, members: ["deviceId"]) == nil)
        #expect(Self.error(#"{"de8iceId":"d1"}"#, members: ["deviceId"])?.code == .invalidRequest)
    }

    /// Whatever the strict check takes, Foundation's decoder reads too (it is the lenient one), over mutated bodies.
    /// RFC 8259 §6 lets a parser limit the range of numbers; `JSONDecoder` refuses what a `Double` cannot hold, so the
    /// check does too, and answers INVALID_REQUEST before any decoder runs.
    @Test func refusesNumbersADoubleCannotHold() {
        for number in ["1e999", "-1.5e713", "2e308", "1e-999", "-2.5E-400", String(repeating: "9", count: 400)] {
            #expect(!Self.isValid(Array("[\(number)]".utf8)), "\(number)")
            #expect((try? JSONDecoder().decode([Double].self, from: Data("[\(number)]".utf8))) == nil, "\(number)")
        }
        for number in ["1e308", "1.7976931348623157e308", "123456789e300", "-0e999", "0.0e-999", "4.9e-324", "1E2"] {
            #expect(Self.isValid(Array("[\(number)]".utf8)), "\(number)")
            #expect((try? JSONDecoder().decode([Double].self, from: Data("[\(number)]".utf8))) != nil, "\(number)")
        }
    }

    @Test func takesNothingFoundationRefuses() {
        let seeds = [
            #"{"userIds":["alice","bob"],"detail":true}"#, #"{"customStatus":"in a \"meeting\" \u00e9"}"#,
            #"{"name":"A","tags":["x","y"],"metadata":{"n":-1.5e3,"z":[null,false,{}]}}"#, #"[0, 10, -2.25, "s\n"]"#,
        ]
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]:,"\/ -+.0123456789eEtrufalsn"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xA9, 0xED, 0xFF]
        var accepted = 0
        for _ in 0..<20_000 {
            var body = Array(seeds.randomElement(using: &generator)!.utf8)
            for _ in 0..<Int.random(in: 0...2, using: &generator) where !body.isEmpty {
                let position = Int.random(in: 0..<body.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: body.remove(at: position)
                case 1: body.insert(alphabet.randomElement(using: &generator)!, at: position)
                default: body[position] = alphabet.randomElement(using: &generator)!
                }
            }
            if Self.isValid(body) {
                accepted += 1
                let decoded = try? JSONDecoder().decode(JSONValue.self, from: Data(body))
                #expect(decoded != nil, "\(String(decoding: body, as: UTF8.self))")
            }
        }
        #expect(accepted > 1_000)
    }
}
