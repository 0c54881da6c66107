import Testing

@testable import StatusServer

/// The node's lease bookkeeping (docs/reliability.md): a lost lease checks the live sessions on the next three
/// lease-period passes; a renewal's lag is how much later than its period it came back.
@Suite struct NodeLeaseStateTests {
    private let start = ContinuousClock.now

    /// What `count` passes in a row are told.
    private static func checks(_ lease: inout NodeLeaseState, _ count: Int) -> [Bool] {
        var taken: [Bool] = []
        for _ in 0..<count { taken.append(lease.takeRefileCheck()) }
        return taken
    }

    @Test func aHeldLeaseAsksForNoCheckAndOnTimeRenewalsHaveNoLag() {
        var lease = NodeLeaseState(period: .seconds(5))
        #expect(lease.renewed(.held, at: start) == .init(lag: .zero, lost: false))
        #expect(lease.renewed(.held, at: start + .seconds(5)) == .init(lag: .zero, lost: false))
        #expect(lease.renewed(.held, at: start + .milliseconds(9_900)) == .init(lag: .zero, lost: false))
        let checked = lease.takeRefileCheck()
        #expect(!checked)
    }

    @Test func aLateRenewalReportsItsLag() {
        var lease = NodeLeaseState(period: .seconds(5))
        _ = lease.renewed(.held, at: start)
        #expect(lease.renewed(.held, at: start + .milliseconds(7_250)).lag == .milliseconds(2_250))
        // Measured from the renewal before, not from the schedule.
        #expect(lease.renewed(.held, at: start + .milliseconds(12_250)).lag == .zero)
    }

    @Test func aLostLeaseChecksTheSessionsOnTheNextThreePassesOnly() {
        var lease = NodeLeaseState(period: .seconds(5))
        _ = lease.renewed(.held, at: start)
        #expect(lease.renewed(.lost, at: start + .seconds(40)) == .init(lag: .seconds(35), lost: true))
        #expect(Self.checks(&lease, 5) == [true, true, true, false, false])
    }

    @Test func aSecondLossStartsTheChecksAgain() {
        var lease = NodeLeaseState(period: .seconds(5))
        _ = lease.renewed(.lost, at: start)
        let first = lease.takeRefileCheck()
        #expect(first)
        _ = lease.renewed(.lost, at: start + .seconds(5))
        #expect(Self.checks(&lease, 4) == [true, true, true, false])
    }
}
