import ServiceLifecycle
import Synchronization

/// Tells this node's ``WebhookDispatcher`` that there may be work before its next look at Redis: an event was queued
/// here, or a delivery finished (a slot is free). Events queued on other nodes are found by the poll.
final class WebhookWakeup: Sendable {
    private let pending = Atomic<Bool>(false)
    private let enqueued = Atomic<Bool>(false)

    /// There may be work.
    func signal() {
        pending.store(true, ordering: .releasing)
    }

    /// An event was queued here: the app may be new to the index, which the dispatcher then reads again at once.
    func signalEnqueued() {
        enqueued.store(true, ordering: .releasing)
        signal()
    }

    /// Whether an event was queued here since the last call.
    func takeEnqueued() -> Bool {
        enqueued.exchange(false, ordering: .acquiringAndReleasing)
    }

    /// Waits up to `timeout` of the node's `clock`, returning early (within `slice`) once signalled. A local flag is
    /// looked at, not Redis. The flag is looked at every `slice` of the system's time whatever the node's clock does:
    /// that is how promptly a signal is seen, not a rule of the node's time. A node shutting down stops waiting at once.
    func wait(upTo timeout: Duration, on clock: any NodeClock, slice: Duration = .milliseconds(5)) async {
        let deadline = clock.now + timeout
        while !pending.exchange(false, ordering: .acquiringAndReleasing), clock.now < deadline, !Task.isShuttingDownGracefully {
            guard (try? await Task.sleep(for: min(slice, deadline - clock.now))) != nil else { return }
        }
    }
}
