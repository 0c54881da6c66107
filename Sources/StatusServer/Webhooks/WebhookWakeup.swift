import Synchronization

/// Tells this node's ``WebhookDispatcher`` that there may be work before its next look at Redis: an event was queued
/// here, or a delivery finished (a slot is free). Events queued on other nodes are found by the poll.
final class WebhookWakeup: Sendable {
    private let pending = Atomic<Bool>(false)

    /// There may be work.
    func signal() {
        pending.store(true, ordering: .releasing)
    }

    /// Waits up to `timeout`, returning early (within `slice`) once signalled. A local flag is looked at, not Redis.
    func wait(upTo timeout: Duration, slice: Duration = .milliseconds(5)) async {
        let deadline = ContinuousClock.now + timeout
        while !pending.exchange(false, ordering: .acquiringAndReleasing), ContinuousClock.now < deadline {
            guard (try? await Task.sleep(for: min(slice, deadline - ContinuousClock.now))) != nil else { return }
        }
    }
}
