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
        var lease = NodeLeaseState(period: .seconds(5), lease: .seconds(15))
        #expect(lease.renewed(.held, sent: start, at: start) == .init(lag: .zero, lost: false))
        #expect(lease.renewed(.held, sent: start + .seconds(5), at: start + .seconds(5)) == .init(lag: .zero, lost: false))
        #expect(lease.renewed(.held, sent: start + .milliseconds(9_900), at: start + .milliseconds(9_900)) == .init(lag: .zero, lost: false))
        let checked = lease.takeRefileCheck()
        #expect(!checked)
    }

    @Test func aLateRenewalReportsItsLag() {
        var lease = NodeLeaseState(period: .seconds(5), lease: .seconds(15))
        _ = lease.renewed(.held, sent: start, at: start)
        #expect(lease.renewed(.held, sent: start + .milliseconds(7_250), at: start + .milliseconds(7_250)).lag == .milliseconds(2_250))
        // Measured from the renewal before, not from the schedule.
        #expect(lease.renewed(.held, sent: start + .milliseconds(12_250), at: start + .milliseconds(12_250)).lag == .zero)
    }

    @Test func aLostLeaseChecksTheSessionsOnTheNextThreePassesOnly() {
        var lease = NodeLeaseState(period: .seconds(5), lease: .seconds(15))
        _ = lease.renewed(.held, sent: start, at: start)
        #expect(lease.renewed(.lost, sent: start + .seconds(40), at: start + .seconds(40)) == .init(lag: .seconds(35), lost: true))
        #expect(Self.checks(&lease, 5) == [true, true, true, false, false])
    }

    @Test func aSecondLossStartsTheChecksAgain() {
        var lease = NodeLeaseState(period: .seconds(5), lease: .seconds(15))
        _ = lease.renewed(.lost, sent: start, at: start)
        let first = lease.takeRefileCheck()
        #expect(first)
        _ = lease.renewed(.lost, sent: start + .seconds(5), at: start + .seconds(5))
        #expect(Self.checks(&lease, 4) == [true, true, true, false])
    }

    // SPEC §9: a node that cannot reach Redis for longer than its lease closes its device sockets with 1013.

    @Test func failuresWithinTheLeaseFromTheLastGoodSendAreNoCutOff() {
        var lease = NodeLeaseState(period: .seconds(5), lease: .seconds(15))
        // Sent at start, answered 200 ms later: the lease holds until start + 15 s, counted from the send.
        _ = lease.renewed(.held, sent: start, at: start + .milliseconds(200))
        let outcome1 = lease.renewalFailed(at: start + .seconds(5))
        #expect(!outcome1)
        let outcome2 = lease.renewalFailed(at: start + .milliseconds(14_999))
        #expect(!outcome2)
        #expect(!lease.isCutOff)
        #expect(!lease.mayHaveBeenFiled(at: start + .milliseconds(14_999)))
        let outcome3 = lease.renewalFailed(at: start + .seconds(15))
        #expect(outcome3)
        #expect(lease.isCutOff)
        #expect(lease.mayHaveBeenFiled(at: start + .seconds(15)))
    }

    @Test func aNodeThatNeverRenewedIsNeverCutOff() {
        var lease = NodeLeaseState(period: .seconds(5), lease: .seconds(15))
        let outcome4 = lease.renewalFailed(at: start + .seconds(60))
        #expect(!outcome4)
        #expect(!lease.mayHaveBeenFiled(at: start + .seconds(60)))
    }

    @Test func aSuccessfulRenewalEndsTheCutOff() {
        var lease = NodeLeaseState(period: .seconds(5), lease: .seconds(15))
        _ = lease.renewed(.held, sent: start, at: start)
        let outcome5 = lease.renewalFailed(at: start + .seconds(16))
        #expect(outcome5)
        // Redis answers again: survivors filed the devices, the lease was gone.
        let outcome6 = lease.renewed(.lost, sent: start + .seconds(20), at: start + .seconds(20)).lost
        #expect(outcome6)
        #expect(!lease.isCutOff)
        // The re-filing is not over: a vanished record may still be the survivors' filing.
        #expect(lease.mayHaveBeenFiled(at: start + .seconds(20)))
        #expect(Self.checks(&lease, 3) == [true, true, true])
        #expect(!lease.mayHaveBeenFiled(at: start + .seconds(21)))
    }

    /// A stalled node (SIGSTOP) did not fail any renewal: once it runs again its lease may have lapsed (survivors may
    /// have filed its devices) before its first renewal says so, but it is not cut off: it re-files, it does not leave.
    @Test func aStalledNodeMayHaveBeenFiledButIsNotCutOff() {
        var lease = NodeLeaseState(period: .seconds(5), lease: .seconds(15))
        _ = lease.renewed(.held, sent: start, at: start)
        let resumed = start + .seconds(40)
        #expect(lease.mayHaveBeenFiled(at: resumed))
        #expect(!lease.isCutOff)
        let outcome7 = lease.renewed(.lost, sent: resumed, at: resumed).lost
        #expect(outcome7)
        let outcome8 = lease.takeRefileCheck()
        #expect(outcome8)
    }
}
