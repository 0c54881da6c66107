import Foundation
import StatusCore
import Synchronization
import Testing

/// SPEC §10.5: a block that begins while the other side's changes are in flight. `a` changes its custom status in a
/// burst (each change published on the bus) while `b`, who watches `a`, blocks `a` or is blocked by `a` in the middle of
/// it, and `b`'s reads of `a` run all along. Whatever the interleaving: `b` never sees `a`'s version go backwards (on its
/// socket, in its reads), never sees a real status of `a` newer than the mask's version, no real status of `a` after
/// the mask on its socket, and from the block's answer on, its reads show the mask. A witness `c`, who watches `a` too
/// and is not blocked, tells when everything `a` published has been delivered (the node hands both sockets their events
/// from the same bus message). A call answered 503 (Redis past the command deadline on a busy machine) changed nothing
/// and is sent again, as a client would.
@Suite(.redis) struct BlockInFlightTests {
    static let pairs = 40
    static let concurrency = 10
    static let changes = 16
    static let config: JSONValue = ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 100_000, "windowSeconds": 1]]

    @Test(arguments: [true, false])
    func aBlockDuringABurstOfChangesNeverShowsVersionsBackwards(viewerBlocks: Bool) async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp(config: Self.config)
            try await app.createUsers((0..<Self.pairs).flatMap { ["a\($0)", "b\($0)", "c\($0)"] })
            var problems: [String] = []
            for start in stride(from: 0, to: Self.pairs, by: Self.concurrency) {
                try await withThrowingTaskGroup(of: [String].self) { group in
                    for index in start..<min(start + Self.concurrency, Self.pairs) {
                        group.addTask {
                            try await Self.pair(index, app: app, port: api.client.port!, viewerBlocks: viewerBlocks)
                        }
                    }
                    for try await found in group { problems += found }
                }
            }
            #expect(problems.isEmpty, "\(problems.count) problems over \(Self.pairs) pairs: \(problems.prefix(12))")
        }
    }

    /// What one read of `b` found: whether the block had been answered before the read was sent, and what it showed.
    struct Read: Sendable {
        var afterAnswer: Bool
        var status: JSONValue
    }

    /// What the tasks of one pair share: whether the burst is over, whether the block was answered, the reads made.
    final class PairLog: Sendable {
        private let state = Mutex<(burstDone: Bool, answered: Bool, reads: [Read])>((false, false, []))

        func burstDone() { state.withLock { $0.burstDone = true } }
        func answered() { state.withLock { $0.answered = true } }
        func read(_ read: Read) { state.withLock { $0.reads.append(read) } }
        var isAnswered: Bool { state.withLock { $0.answered } }
        var finished: Bool { state.withLock { $0.burstDone && $0.answered } }
        var reads: [Read] { state.withLock { $0.reads } }
    }

    static func isMask(_ status: JSONValue) -> Bool { status["statusType"].string == "offline" && status["customStatus"] == nil }

    /// One pair: returns what went wrong, as readable lines.
    static func pair(_ index: Int, app: APIClient, port: Int, viewerBlocks: Bool) async throws -> [String] {
        let (a, b, c) = ("a\(index)", "b\(index)", "c\(index)")
        _ = expectOK(try await app.login(a, "phone"))
        _ = expectOK(try await app.subscribe(b, [a]))
        _ = expectOK(try await app.subscribe(c, [a]))
        return try await app.withDevice(port: port, userId: b, DeviceOptions(deviceId: "viewer")) { viewer, _ in
            try await app.withDevice(port: port, userId: c, DeviceOptions(deviceId: "witness")) { witness, _ in
                let log = PairLog()
                // The block is sent once this many changes were answered: each pair meets the burst at another point.
                let blockAfter = 2 + index % 6
                let (started, go) = AsyncStream<Void>.makeStream()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for step in 1...changes {
                            _ = expectOK(try await retryingUnavailable { try await app.setStatus(a, "s\(step)") })
                            if step == blockAfter { go.yield() }
                        }
                        go.finish()
                        log.burstDone()
                    }
                    group.addTask {
                        for await _ in started { break }
                        let (blocker, blocked) = viewerBlocks ? (b, a) : (a, b)
                        _ = expectOK(
                            try await retryingUnavailable { try await app.call(.put, "/users/\(blocker)/blocks", ["userIds": [.string(blocked)]]) }
                        )
                        log.answered()
                    }
                    group.addTask {
                        while !log.finished {
                            let after = log.isAnswered
                            let status = try await retryingUnavailable { try await app.query(b, [a]) }.body["statuses"][0]
                            log.read(Read(afterAnswer: after, status: status))
                        }
                    }
                    try await group.waitForAll()
                }
                let mask = try await retryingUnavailable { try await app.query(b, [a]) }.body["statuses"][0]
                // One more change, which nobody but the witness may hear: once it has it, so has the viewer what came before.
                _ = expectOK(try await retryingUnavailable { try await app.setStatus(a, "final") })
                _ = try await witness.next(timeout: .seconds(5)) {
                    $0["event"].string == "onUserStatusChanged" && $0["statuses"][0]["customStatus"].string == "final"
                }
                let events = try await viewer.statusEvents(of: a, settle: .milliseconds(300))
                return check(a, mask: mask, reads: log.reads, events: events)
            }
        }
    }

    static func check(_ a: String, mask: JSONValue, reads: [Read], events: [JSONValue]) -> [String] {
        var problems: [String] = []
        guard isMask(mask), let frozen = mask["version"].int else { return ["\(a): the read after the block is \(mask)"] }
        var last: Int64 = 0
        for read in reads {
            let version = read.status["version"].int ?? 0
            if version < last { problems.append("\(a): read \(version) after \(last)") }
            last = max(last, version)
            if !isMask(read.status), version > frozen { problems.append("\(a): read real \(version) above the mask's \(frozen)") }
            if read.afterAnswer, !isMask(read.status) { problems.append("\(a): read real \(version) after the block's answer") }
        }
        if last > frozen { problems.append("\(a): the mask's \(frozen) below a read \(last)") }
        last = 0
        var masked = false
        for event in events {
            let version = event["version"].int ?? 0
            if version < last { problems.append("\(a): event \(version) after \(last)") }
            last = max(last, version)
            if isMask(event) {
                masked = true
                if version != frozen { problems.append("\(a): mask event \(version), reads show \(frozen)") }
            } else {
                if version > frozen { problems.append("\(a): event real \(version) above the mask's \(frozen)") }
                if masked { problems.append("\(a): event real \(version) after the mask") }
            }
        }
        if !masked { problems.append("\(a): no mask event (\(events.count) events, last \(last), mask \(frozen))") }
        return problems
    }
}
