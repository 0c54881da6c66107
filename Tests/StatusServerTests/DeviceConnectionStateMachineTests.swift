import NIOCore
import StatusCore
import Testing

@testable import StatusServer

/// The device connection's lifecycle as a pure value (no socket, no clock): what is written, when it closes, what is
/// filed.
@Suite struct DeviceConnectionStateMachineTests {
    typealias Machine = DeviceConnectionStateMachine

    private func status(_ userId: String, version: Int64) -> UserStatus {
        UserStatus(userId: userId, statusType: .online, customStatus: nil, lastActiveAt: nil, version: version, onlineDevices: [])
    }

    private func event(_ userId: String, version: Int64) throws -> StatusEvent {
        try StatusEvent(status(userId, version: version))
    }

    private func openMachine(limits: Machine.Limits = Machine.Limits(), nowMs: Int64 = 0) -> Machine {
        var machine = Machine(limits: limits, nowMs: nowMs)
        _ = machine.attached(welcome: WebSocketWire.text("welcome"))
        return machine
    }

    private func request(_ text: String) -> Machine.Frame {
        .text(ByteBuffer(string: text), fin: true)
    }

    /// The payload of an unmasked server frame with a short header.
    private func payload(_ frame: ByteBuffer) -> String {
        var frame = frame
        _ = frame.readInteger(as: UInt8.self)
        let length = frame.readInteger(as: UInt8.self)!
        if length == 126 { _ = frame.readInteger(as: UInt16.self) }
        return frame.readString(length: frame.readableBytes)!
    }

    private func closeCode(_ frame: ByteBuffer) -> UInt16? {
        guard frame.getInteger(at: 0, as: UInt8.self) == 0x88 else { return nil }
        return frame.getInteger(at: 2, as: UInt16.self)
    }

    @Test func eventsThatArriveBeforeTheWelcomeFollowItCoalesced() throws {
        var machine = Machine(nowMs: 0)
        #expect(machine.deliver(try event("bob", version: 1)) == .none)
        #expect(machine.deliver(try event("bob", version: 2)) == .none)
        guard case .writeAndFlush(let frames) = machine.attached(welcome: WebSocketWire.text("hello")) else {
            Issue.record("the welcome was not written")
            return
        }
        #expect(frames.count == 2)
        #expect(payload(frames[0]) == "hello")
        let coalesced = payload(frames[1])
        #expect(coalesced.hasPrefix(#"{"event":"onUserStatusChanged","statuses":[{"#))
        #expect(coalesced.components(separatedBy: #""version":"#).count == 3, "both versions are kept: \(coalesced)")
    }

    /// A device never sees a version go back (SPEC §2, §10.5): what waited for the welcome and is older than what the
    /// opening frames showed of its user (the welcome's own status, alice v3; a snapshot's, bob v2) is dropped; what is
    /// as new or newer, and any user's they did not show, follows them.
    @Test func eventsOlderThanTheOpeningFramesAreDroppedFromTheBacklog() throws {
        var machine = Machine(nowMs: 0)
        _ = machine.deliver(try event("alice", version: 2), nowMs: 0)
        _ = machine.deliver(try event("alice", version: 3), nowMs: 0)
        _ = machine.deliver(try event("bob", version: 1), nowMs: 0)
        _ = machine.deliver(try event("carol", version: 1), nowMs: 0)
        let shown = [(userKey: ResumePoint.userKey("bob"), version: Int64(2)), (ResumePoint.userKey("alice"), 3)]
        guard case .writeAndFlush(let frames) = machine.attached(welcome: WebSocketWire.text("hello"), shown: shown, nowMs: 10) else {
            Issue.record("the welcome was not written")
            return
        }
        #expect(frames.count == 2)
        let coalesced = payload(frames[1])
        #expect(!coalesced.contains(#""version":2"#), "alice v2 is older than the welcome's v3: \(coalesced)")
        #expect(!coalesced.contains(#""userId":"bob""#), "bob v1 is older than the snapshot's v2: \(coalesced)")
        #expect(coalesced.components(separatedBy: #""version":"#).count == 3, "alice v3 and carol v1 follow: \(coalesced)")
    }

    /// For a while after the welcome an older event of a user the opening frames showed is not written (it was read or
    /// published before them and reached the session after); past ``DeviceConnectionStateMachine/openingFloorMs`` the
    /// floors are gone.
    @Test func eventsOlderThanTheOpeningFramesAreNotWrittenForAWhile() throws {
        var machine = Machine(nowMs: 0)
        let shown = [(userKey: ResumePoint.userKey("bob"), version: Int64(5)), (ResumePoint.userKey("dave"), 7)]
        _ = machine.attached(welcome: WebSocketWire.text("hello"), shown: shown, nowMs: 1_000)
        #expect(machine.deliver(try event("bob", version: 4), nowMs: 1_100) == .none)
        #expect(machine.deliver(try event("dave", version: 6), nowMs: 1_150) == .none)
        let same = try event("bob", version: 5)
        #expect(machine.deliver(same, nowMs: 1_200) == .write(same.frame))
        let other = try event("carol", version: 1)
        #expect(machine.deliver(other, nowMs: 1_300) == .write(other.frame))
        let late = try event("bob", version: 3)
        #expect(machine.deliver(late, nowMs: 1_000 + Machine.openingFloorMs) == .write(late.frame))
    }

    @Test func aWritableSocketGetsTheSharedFrameWithoutAFlush() throws {
        var machine = openMachine()
        let shared = try event("bob", version: 3)
        #expect(machine.deliver(shared) == .write(shared.frame))
    }

    @Test func aFullSocketGetsItsBacklogAsOneFrameInOrderOnceItDrains() throws {
        var machine = openMachine()
        #expect(machine.writabilityChanged(isWritable: false) == .none)
        for version in 1...3 { #expect(machine.deliver(try event("bob", version: Int64(version))) == .none) }
        guard case .writeAndFlush(let frames) = machine.writabilityChanged(isWritable: true), frames.count == 1 else {
            Issue.record("the backlog was not written as one frame")
            return
        }
        let text = payload(frames[0])
        let v1 = try #require(text.range(of: #""version":1"#))
        let v2 = try #require(text.range(of: #""version":2"#))
        let v3 = try #require(text.range(of: #""version":3"#))
        #expect(v1.lowerBound < v2.lowerBound && v2.lowerBound < v3.lowerBound)
        // Drained: the next event goes straight out again.
        let next = try event("bob", version: 4)
        #expect(machine.deliver(next) == .write(next.frame))
    }

    @Test func aDeviceWhoseBacklogOutgrowsItsBoundIsCutOffAndFiledAsGone() throws {
        var limits = Machine.Limits()
        limits.backlogBytes = 1024
        var machine = openMachine(limits: limits)
        _ = machine.writabilityChanged(isWritable: false)
        var action = Machine.Action.none
        var delivered = 0
        while action == .none, delivered < 1000 {
            action = machine.deliver(try event("bob", version: Int64(delivered)))
            delivered += 1
        }
        #expect(action == .closeNow)
        #expect(delivered < 100, "cut off only after \(delivered) events")
        #expect(machine.deliver(try event("bob", version: 9999)) == .none)
        #expect(machine.channelClosed() == .fileDeparture(.tooSlow))
    }

    @Test func requestsRunOneAtATimeInOrder() {
        var machine = openMachine()
        #expect(machine.received(request(#"{"id":"1"}"#), nowMs: 0) == .execute(ByteBuffer(string: #"{"id":"1"}"#)))
        #expect(machine.received(request(#"{"id":"2"}"#), nowMs: 0) == .none)
        #expect(!machine.wantsToRead, "reading pauses while a request waits")
        let reply = ByteBuffer(string: "r1")
        #expect(machine.requestFinished(reply, closeAfter: false) == .replyAndExecute(reply: reply, next: ByteBuffer(string: #"{"id":"2"}"#)))
        #expect(machine.wantsToRead)
        #expect(machine.requestFinished(ByteBuffer(string: "r2"), closeAfter: false) == .writeAndFlush([ByteBuffer(string: "r2")]))
    }

    @Test func aSocketMayBurstOneHundredRequestsThenFiftyASecond() {
        var machine = openMachine()
        for _ in 0..<100 {
            #expect(machine.received(request("{}"), nowMs: 0) == .execute(ByteBuffer(string: "{}")))
            _ = machine.requestFinished(ByteBuffer(string: "ok"), closeAfter: false)
        }
        guard case .refuse(let refused, let error) = machine.received(request(#"{"id":"x"}"#), nowMs: 0) else {
            Issue.record("the 101st request was not refused")
            return
        }
        #expect(refused == ByteBuffer(string: #"{"id":"x"}"#))
        #expect(error.code == .rateLimited)
        #expect(error.retryAfterMs == 20)
        // 20 ms later one token is back (50 per second).
        #expect(machine.received(request("{}"), nowMs: 20) == .execute(ByteBuffer(string: "{}")))
    }

    @Test func unmaskedFramesCloseWithProtocolError() {
        var machine = openMachine()
        guard case .closeAfterWriting(let frames) = machine.received(.malformed("client frames must be masked"), nowMs: 0) else {
            Issue.record("not closed")
            return
        }
        #expect(frames.count == 1)
        #expect(closeCode(frames[0]) == 1002)
        #expect(machine.channelClosed() == .fileDeparture(.disconnected))
    }

    @Test func invalidUTF8TextClosesWith1007() {
        var machine = openMachine()
        var bad = ByteBuffer()
        bad.writeBytes([0x7B, 0xFF, 0xFE, 0x7D])
        guard case .closeAfterWriting(let frames) = machine.received(.text(bad, fin: true), nowMs: 0) else {
            Issue.record("not closed")
            return
        }
        #expect(frames.map(closeCode) == [1007])
    }

    @Test func fragmentedTextIsReassembledAndAStrayContinuationIsAProtocolError() {
        var machine = openMachine()
        #expect(machine.received(.text(ByteBuffer(string: #"{"id":"#), fin: false), nowMs: 0) == .none)
        #expect(machine.received(.continuation(ByteBuffer(string: #""7"}"#), fin: true), nowMs: 0) == .execute(ByteBuffer(string: #"{"id":"7"}"#)))
        var other = openMachine()
        guard case .closeAfterWriting(let frames) = other.received(.continuation(ByteBuffer(string: "x"), fin: true), nowMs: 0) else {
            Issue.record("not closed")
            return
        }
        #expect(frames.map(closeCode) == [1002])
    }

    @Test func aKickWritesItsEventAndACloseFrameThenTheDepartureIsNotFiledAgain() {
        var machine = openMachine()
        let kicked = WebSocketWire.text(#"{"event":"kicked","reason":"kicked"}"#)
        guard case .closeAfterWriting(let frames) = machine.end(.removed, farewell: [kicked]) else {
            Issue.record("not closed")
            return
        }
        #expect(frames.first == kicked)
        #expect(frames.map(closeCode) == [nil, 1000])
        // The first reason wins; a late timeout changes nothing.
        #expect(machine.end(.timedOut, farewell: []) == .none)
        #expect(machine.channelClosed() == .fileDeparture(.removed))
        #expect(machine.channelClosed() == .none)
    }

    @Test func aTimedOutSessionClosesWithGoingAwayAndIsFiledAsATimeout() {
        var machine = openMachine()
        guard case .closeAfterWriting(let frames) = machine.end(.timedOut, farewell: []) else {
            Issue.record("not closed")
            return
        }
        #expect(frames.map(closeCode) == [1001])
        #expect(machine.channelClosed() == .fileDeparture(.timedOut))
    }

    @Test func aLogoutRepliesThenClosesWithoutFilingAgain() {
        var machine = openMachine()
        _ = machine.received(request(#"{"op":"logout"}"#), nowMs: 0)
        let reply = ByteBuffer(string: "bye")
        guard case .closeAfterWriting(let frames) = machine.requestFinished(reply, closeAfter: true) else {
            Issue.record("not closed")
            return
        }
        #expect(frames.first == reply)
        #expect(machine.channelClosed() == .fileDeparture(.removed))
    }

    @Test func thePeersCloseIsAnsweredAndItsAnswerToOursClosesAtOnce() {
        var machine = openMachine()
        guard case .closeAfterWriting(let frames) = machine.received(.close(ByteBuffer()), nowMs: 0) else {
            Issue.record("the peer's close was not answered")
            return
        }
        #expect(frames.map(closeCode) == [1000])
        var ending = openMachine()
        _ = ending.end(.removed, farewell: [])
        #expect(ending.wantsToRead, "a closing socket reads on to see the peer's answer")
        #expect(ending.received(.close(ByteBuffer()), nowMs: 0) == .closeNow)
    }

    /// RFC 6455 §7.4: a valid code is echoed; one that may not be sent, or a one-byte payload, is a protocol error
    /// (1002); a reason that is not UTF-8 is 1007.
    static let closeCases: [CloseCase] = [
        CloseCase(payload: [0x03, 0xE8], answer: 1000),
        CloseCase(payload: [0x03, 0xE9], answer: 1001),
        CloseCase(payload: [0x0B, 0xB8, 0x68, 0x69], answer: 3000),
        CloseCase(payload: [0x13, 0x87], answer: 4999),
        CloseCase(payload: [0x03, 0xF3], answer: 1011),
        CloseCase(payload: [0x03], answer: 1002),
        CloseCase(payload: [0x03, 0xE7], answer: 1002),
        CloseCase(payload: [0x03, 0xED], answer: 1002),
        CloseCase(payload: [0x03, 0xEE], answer: 1002),
        CloseCase(payload: [0x03, 0xF7], answer: 1002),
        CloseCase(payload: [0x07, 0xCF], answer: 1002),
        CloseCase(payload: [0x13, 0x88], answer: 1002),
        CloseCase(payload: [0x00, 0x00], answer: 1002),
        CloseCase(payload: [0x03, 0xE8, 0xFF, 0xFE], answer: 1007),
        CloseCase(payload: [0x03, 0xE8, 0xCE, 0xBA, 0xE1, 0xBD, 0xB9], answer: 1000),
    ]

    struct CloseCase: Sendable, CustomTestStringConvertible {
        var payload: [UInt8]
        var answer: UInt16
        var testDescription: String { "\(payload) → \(answer)" }
    }

    @Test(arguments: closeCases)
    func closeFramesAreValidatedAndAnswered(_ close: CloseCase) {
        var machine = openMachine()
        guard case .closeAfterWriting(let frames) = machine.received(.close(ByteBuffer(bytes: close.payload)), nowMs: 0) else {
            Issue.record("the peer's close was not answered")
            return
        }
        #expect(frames.map(closeCode) == [close.answer])
    }

    @Test func aSessionEndedBeforeItsWelcomeGetsTheWelcomeThenItsFarewell() {
        var machine = Machine(nowMs: 0)
        let kicked = WebSocketWire.text("kicked")
        #expect(machine.end(.removed, farewell: [kicked]) == .none)
        let welcome = WebSocketWire.text("welcome")
        guard case .closeAfterWriting(let frames) = machine.attached(welcome: welcome) else {
            Issue.record("not closed")
            return
        }
        #expect(frames.count == 3)
        #expect(frames[0] == welcome && frames[1] == kicked && closeCode(frames[2]) == 1000)
    }

    @Test func aFullSocketStopsReading() {
        var machine = openMachine()
        #expect(machine.wantsToRead)
        _ = machine.writabilityChanged(isWritable: false)
        #expect(!machine.wantsToRead)
        _ = machine.writabilityChanged(isWritable: true)
        #expect(machine.wantsToRead)
    }

    @Test func aRequestAnsweredAfterTheSocketClosedIsDropped() {
        var machine = openMachine()
        _ = machine.received(request("{}"), nowMs: 0)
        _ = machine.channelClosed()
        #expect(machine.requestFinished(ByteBuffer(string: "late"), closeAfter: false) == .none)
    }
}
