import Testing

@testable import StatusServer

@Suite struct JSONMemberSetTests {
    @Test func aMemberIsFirstOnceAndEveryOtherStaysFirst() {
        var seen = JSONMemberSet()
        var answers: [Bool] = []
        #expect(!seen.contains(0))
        answers.append(seen.first(0))
        answers.append(seen.first(0))
        #expect(answers == [true, false])
        #expect(seen.contains(0))
        answers = [seen.first(63), seen.first(63)]
        #expect(answers == [true, false])
        for ordinal in 1..<63 {
            #expect(!seen.contains(ordinal))
            let first = seen.first(ordinal)
            #expect(first, "member \(ordinal)")
        }
        for ordinal in 0..<64 {
            let again = seen.first(ordinal)
            #expect(!again, "member \(ordinal)")
        }
    }

    @Test func everyBusFieldHasANumberOfItsOwn() {
        let fields = BusMessage.Field.allCases
        #expect(Set(fields.map(\.ordinal)).count == fields.count)
        #expect(fields.allSatisfy { (0..<64).contains($0.ordinal) })
    }
}
