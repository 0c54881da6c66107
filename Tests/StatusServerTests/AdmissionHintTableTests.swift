import Testing

@testable import StatusServer

/// SPEC §10.7: one app cannot starve another. The admission hints are kept per app, at most 1,000 users at their limit
/// per app and 10,000 on the node; an app that fills its share leaves room for the others.
@Suite struct AdmissionHintTableTests {
    private let now = ContinuousClock.now

    private func key(_ index: Int) -> AdmissionHintTable.Key {
        .init(userId: "u\(index)", operation: .getUserStatus)
    }

    @Test func aHintHoldsUntilItsMomentThenGoes() {
        var table = AdmissionHintTable()
        table.remember(key(1), of: "a", until: now + .seconds(1), now: now)
        let before = table.admitFirst(key(1), of: "a", now: now + .milliseconds(999))
        let otherApp = table.admitFirst(key(1), of: "b", now: now)
        let after = table.admitFirst(key(1), of: "a", now: now + .seconds(1))
        #expect(before && !otherApp && !after)
        #expect(table.count == 0)
    }

    @Test func oneAppCannotFillTheTableForEveryone() {
        var table = AdmissionHintTable()
        for index in 0..<(AdmissionHintTable.perAppCapacity + 500) {
            table.remember(key(index), of: "noisy", until: now + .seconds(60), now: now)
        }
        #expect(table.count(of: "noisy") == AdmissionHintTable.perAppCapacity)
        table.remember(key(1), of: "quiet", until: now + .seconds(60), now: now)
        let quiet = table.admitFirst(key(1), of: "quiet", now: now)
        #expect(quiet)
        // The noisy app's expired hints make room for its new ones.
        table.remember(key(99_999), of: "noisy", until: now + .seconds(120), now: now + .seconds(61))
        #expect(table.count(of: "noisy") == 1)
    }

    @Test func theNodeBoundHoldsAcrossApps() {
        var table = AdmissionHintTable()
        let apps = AdmissionHintTable.capacity / AdmissionHintTable.perAppCapacity + 2
        for app in 0..<apps {
            for index in 0..<AdmissionHintTable.perAppCapacity {
                table.remember(key(index), of: "app\(app)", until: now + .seconds(60), now: now)
            }
        }
        #expect(table.count == AdmissionHintTable.capacity)
        table.forget(key(0), of: "app0")
        #expect(table.count == AdmissionHintTable.capacity - 1)
    }
}
