import Testing

@testable import StatusServer

/// A session's connection id, which is also its resume token: a version 4 UUID of random bits.
@Suite struct ConnectionIdTests {
    @Test func theVersionAndVariantBitsAreSetWhateverTheRandomBits() {
        #expect(ConnectionId.make(high: 0, low: 0) == "00000000-0000-4000-8000-000000000000")
        #expect(ConnectionId.make(high: .max, low: .max) == "FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF")
        #expect(ConnectionId.make(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210) == "01234567-89AB-4DEF-BEDC-BA9876543210")
    }

    @Test func idsAreDistinctAndPlausibleResumeTokens() {
        let ids = (0..<1000).map { _ in ConnectionId.make() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(ResumePoint.isPlausible(token: id))
            let bytes = Array(id.utf8)
            #expect(bytes.count == 36)
            #expect(bytes[14] == UInt8(ascii: "4"))
            #expect([UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "A"), UInt8(ascii: "B")].contains(bytes[19]))
        }
    }
}
