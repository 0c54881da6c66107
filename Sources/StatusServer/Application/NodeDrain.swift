import ServiceLifecycle
import Synchronization

/// SPEC §9: a node asked to stop (SIGTERM) drains. First it stops being ready (`/readyz` answers 503 and new device
/// upgrades are refused with 503), so that a load balancer stops sending it devices; then it closes its device
/// sockets with close code 1012 (service restart), spread evenly over ``duration`` so that their reconnects do not
/// all land on the other nodes at once; then the node stops as before. A departure by drain counts as a dropped
/// connection, so with an `offlineGraceSeconds` longer than a reconnect takes, a device that moves to another node
/// changes nothing for anyone (SPEC §10.3).
///
/// Shared by the node's parts that take part: the health route and the gateway read ``isDraining``; the fan-out
/// attaches the closing of its sessions (``attach(_:)``); ``NodeDrainService`` starts it.
public final class NodeDrain: Sendable {
    /// How long the closing of the device sockets is spread over.
    public let duration: Duration
    private let draining = Atomic<Bool>(false)
    private let closer = Mutex<(@Sendable (Duration) async -> Void)?>(nil)

    /// A drain spread over `duration` (10 s by default: `--drain-seconds`).
    public init(duration: Duration = .seconds(10)) {
        self.duration = duration
    }

    /// The longest a node asked to stop takes to exit: its drain, then up to 8 s for the departures of the devices it
    /// closed to be filed and for its services to stop. Past it the stop is forced (its tasks cancelled): a node on a
    /// machine busy with the reconnects of its own devices elsewhere could otherwise take a minute, and an orchestrator
    /// waits for it (`terminationGracePeriodSeconds`) or kills it without a drain at all. A departure left unfiled stays
    /// on the node's device list in Redis, which the other nodes file when its lease runs out (SPEC §9), unless its
    /// device has connected again elsewhere meanwhile.
    public var stopBound: Duration { duration + .seconds(8) }

    /// Whether the node is draining: not ready, refusing new devices.
    var isDraining: Bool { draining.load(ordering: .relaxed) }

    /// What closes the node's device sockets over a given time (the fan-out's).
    func attach(_ close: @escaping @Sendable (Duration) async -> Void) {
        closer.withLock { $0 = close }
    }

    /// Drains: not ready from now on, then the device sockets closed over ``duration``; returns when they are.
    public func drain() async {
        guard !draining.exchange(true, ordering: .relaxed) else { return }
        guard let close = closer.withLock({ $0 }) else { return }
        await close(duration)
    }
}

/// Runs a node's drain when the process is asked to stop. Placed after the application in the process's service group,
/// so that it is told first (a service group stops its services in reverse order): the node drains while it still
/// serves everything else, and only then does the server stop listening and the rest shut down.
public struct NodeDrainService: Service {
    let drain: NodeDrain

    public init(drain: NodeDrain) {
        self.drain = drain
    }

    public func run() async throws {
        try? await gracefulShutdown()
        await drain.drain()
    }
}
