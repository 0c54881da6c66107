import NIOCore
import Synchronization

/// The deliveries waiting for one event loop, handed over in one task however many bus batches were posted meanwhile.
///
/// A loop given one task per bus batch runs them back to back while its sockets wait: device requests, and the Redis
/// replies and bus messages of the connections the loop also serves, queue behind every delivery posted before them.
/// Measured under workload W at 1,600 changes/s (docs/benchmarks.md), a request frame then waited up to 100 ms to be read
/// and the Redis round trip of a change took 7 ms at the median. Here a batch posted while a drain is already scheduled
/// joins it: the loop runs one drain per turn, makes at most ``turnLimit`` deliveries, flushes each socket it wrote to
/// once (a device's events from several batches leave in one `writev`), and leaves the rest to its next turn, after its
/// reads. Deliveries keep the order they were posted in (``LoopMailboxState``).
///
/// The waiting deliveries are bounded: past ``highWater`` the poster waits (``FanoutService`` stops reading its inbox,
/// whose own bound then applies) until a drain brings them under ``lowWater``.
final class LoopMailbox: Sendable {
    /// The most deliveries one drain makes before the loop goes back to its sockets.
    static let turnLimit = 4_096
    /// Deliveries waiting past which the poster waits.
    static let highWater = 200_000
    /// Deliveries waiting under which a waiting poster goes on.
    static let lowWater = 50_000

    typealias Item = (event: StatusEvent, sessions: [DeviceSession])

    let loop: any EventLoop
    private let state = Mutex(
        (
            mailbox: LoopMailboxState<Item>(turnLimit: turnLimit, highWater: highWater, lowWater: lowWater),
            waiters: [CheckedContinuation<Void, Never>]()
        )
    )

    init(loop: any EventLoop) {
        self.loop = loop
    }

    /// Queues deliveries for this loop and schedules a drain unless one is waiting; true when the deliveries waiting are
    /// past ``highWater`` (the poster then awaits ``belowLowWater()``).
    func post(_ items: [(StatusEvent, [DeviceSession])]) -> Bool {
        let weighed = items.map { (item: (event: $0.0, sessions: $0.1), deliveries: $0.1.count) }
        let posted = state.withLock { $0.mailbox.post(weighed) }
        if posted.schedule { loop.execute { self.drain() } }
        return posted.full
    }

    /// Returns once the deliveries waiting are under ``lowWater``.
    func belowLowWater() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.mailbox.isBelowLowWater { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// On the loop: delivers what one turn takes and flushes each socket written to once.
    private func drain() {
        let (taken, released) = state.withLock { state in
            let taken = state.mailbox.take()
            var released: [CheckedContinuation<Void, Never>] = []
            if taken.belowLowWater { swap(&released, &state.waiters) }
            return (taken, released)
        }
        if taken.more { loop.execute { self.drain() } }
        for waiter in released { waiter.resume() }
        var written: [DeviceChannelHandler] = []
        for (event, sessions) in taken.items {
            for session in sessions {
                if let handler = session.deliver(event) { written.append(handler) }
            }
        }
        for handler in written { handler.flushIfNeeded() }
    }
}

/// The mailbox of each event loop that holds device sockets, made on first use (a node has a few loops).
final class LoopMailboxes: Sendable {
    private let mailboxes = Mutex<[ObjectIdentifier: LoopMailbox]>([:])

    func of(_ loop: any EventLoop) -> LoopMailbox {
        mailboxes.withLock { mailboxes in
            if let mailbox = mailboxes[ObjectIdentifier(loop)] { return mailbox }
            let mailbox = LoopMailbox(loop: loop)
            mailboxes[ObjectIdentifier(loop)] = mailbox
            return mailbox
        }
    }
}
