import Testing

@testable import StatusCore

@Suite struct RequestRulesTests {
    private func code(_ body: () throws -> Void) -> StatusError.Code? {
        do {
            try body()
            return nil
        } catch {
            return (error as? StatusError)?.code
        }
    }

    @Test func customStatusOfExactlyTheLimitIsKept() throws {
        let value = String(repeating: "x", count: 100)
        #expect(try RequestRules.customStatus(value, maxBytes: 100) == value)
    }

    @Test func customStatusOverTheLimitIsRejectedNotTruncated() {
        let value = String(repeating: "x", count: 101)
        #expect(code { _ = try RequestRules.customStatus(value, maxBytes: 100) } == .customStatusTooLong)
    }

    @Test func customStatusIsCountedInUTF8Bytes() throws {
        // "é" is 2 bytes and "🎵" is 4: 6 bytes per pair.
        let pair = "é🎵"
        #expect(pair.utf8.count == 6)
        let sixteen = String(repeating: pair, count: 16)  // 96 bytes, 32 characters
        #expect(try RequestRules.customStatus(sixteen, maxBytes: 100) == sixteen)
        #expect(try RequestRules.customStatus(sixteen + "abcd", maxBytes: 100) == sixteen + "abcd")  // 100 bytes
        #expect(code { _ = try RequestRules.customStatus(sixteen + "abcde", maxBytes: 100) } == .customStatusTooLong)  // 101
        #expect(code { _ = try RequestRules.customStatus(sixteen + "é🎵", maxBytes: 100) } == .customStatusTooLong)  // 102
        // 34 pairs: only 68 characters but 204 bytes.
        let long = String(repeating: pair, count: 34)
        #expect(long.count == 68)
        #expect(code { _ = try RequestRules.customStatus(long, maxBytes: 100) } == .customStatusTooLong)
        // 50 two-byte characters are exactly 100 bytes; 51 are not.
        #expect(try RequestRules.customStatus(String(repeating: "é", count: 50), maxBytes: 100) != nil)
        #expect(code { _ = try RequestRules.customStatus(String(repeating: "é", count: 51), maxBytes: 100) } == .customStatusTooLong)
        // 25 four-byte emoji are 100 bytes; a 26th is over.
        #expect(try RequestRules.customStatus(String(repeating: "🎵", count: 25), maxBytes: 100) != nil)
        #expect(code { _ = try RequestRules.customStatus(String(repeating: "🎵", count: 26), maxBytes: 100) } == .customStatusTooLong)
    }

    @Test func customStatusHonoursTheConfiguredLimit() throws {
        #expect(try RequestRules.customStatus("abcde", maxBytes: 5) == "abcde")
        #expect(code { _ = try RequestRules.customStatus("abcdef", maxBytes: 5) } == .customStatusTooLong)
        #expect(try RequestRules.customStatus(String(repeating: "y", count: 300), maxBytes: 300) != nil)
    }

    @Test func emptyOrNilCustomStatusClears() throws {
        #expect(try RequestRules.customStatus("", maxBytes: 100) == nil)
        #expect(try RequestRules.customStatus(nil, maxBytes: 100) == nil)
        #expect(try RequestRules.customStatus("", maxBytes: 0) == nil)
    }

    @Test func batchCountsIdsAsSentBeforeFolding() throws {
        #expect(try RequestRules.batch(["a", "a", "a"], limit: 3) == ["a"])
        #expect(code { _ = try RequestRules.batch(["a", "a", "a", "a"], limit: 3) } == .tooManyUsers)
        #expect(try RequestRules.batch(["a", "b", "a"], limit: 500) == ["a", "b"])
    }

    @Test func batchLimitIsInclusive() throws {
        let hundred = (0..<100).map { "u\($0)" }
        #expect(try RequestRules.batch(hundred, limit: 100).count == 100)
        #expect(code { _ = try RequestRules.batch(hundred + ["u100"], limit: 100) } == .tooManyUsers)
    }

    @Test func emptyBatchIsInvalidUnlessAllowed() throws {
        #expect(code { _ = try RequestRules.batch([], limit: 100) } == .invalidRequest)
        #expect(try RequestRules.batch([], limit: 100, allowEmpty: true) == [])
    }

    @Test func batchWithOneBadIdFails() {
        #expect(code { _ = try RequestRules.batch(["ok", "not ok"], limit: 100) } == .invalidUserId)
        #expect(code { _ = try RequestRules.batch(["ok", "not ok"], limit: 100, allowEmpty: true) } == .invalidUserId)
    }

    @Test func listLimitDefaultsTo30AndAccepts1Through100() throws {
        #expect(try RequestRules.listLimit(nil) == 30)
        #expect(try RequestRules.listLimit("1") == 1)
        #expect(try RequestRules.listLimit("50") == 50)
        #expect(try RequestRules.listLimit("100") == 100)
    }

    @Test(arguments: ["0", "101", "-1", "abc", "", "1.5", "99999999999999999999999"])
    func listLimitOutsideRangeIsInvalidLimit(_ raw: String) {
        #expect(code { _ = try RequestRules.listLimit(raw) } == .invalidLimit)
    }
}
