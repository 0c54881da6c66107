/// Which device upgrades a node takes on, decided before any of their work is done: the bound that keeps a reconnect
/// storm (a node drained or killed, its devices all reconnecting to the others) from overwhelming the node that takes it.
///
/// Every connect waits its turn in the node's ``DeviceWorkQueue``. Without a bound on them, a storm larger than the node
/// connects per second queues up until the connects at the back wait longer than the request timeout (10 s): their
/// connections are closed unanswered, each after the node has spent a whole connect on it, the clients retry, and the
/// node spends its time on connects nobody waits for any more. So an upgrade is refused at once, cheaply (503
/// `UNAVAILABLE` with `Retry-After`, before its token is read), when ``Limits/maxPending`` upgrades are already waiting
/// or connecting; one whose turn comes after ``Limits/maxWaitMs`` is refused then rather than connected late; one
/// whose connection closed meanwhile is skipped; and a node that is stopping refuses them all (SPEC §9).
///
/// A pure type: the gateway holds it under a lock and does what it decides.
public struct UpgradeAdmission: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Upgrades queued or connecting past which a new one is refused at once (`--max-pending-connects`).
        public var maxPending = 512
        /// The longest an upgrade may wait for its turn and still be connected; later it is refused, as the client may
        /// well have given up (and its request timeout, counted from its first byte, would soon close it unanswered).
        var maxWaitMs: Int64 = 5_000
        /// The `Retry-After` of a refused upgrade: about how long the node needs to work through what it has pending.
        var retryAfterMs: Int64 = 1_000

        public init() {}
    }

    /// Why an upgrade is refused with 503.
    enum Refusal: Sendable, Equatable {
        /// The node is stopping (SPEC §9): reconnect through another node.
        case draining
        /// ``Limits/maxPending`` upgrades are pending already.
        case busy
        /// Its turn came after ``Limits/maxWaitMs``.
        case late
    }

    /// What an arriving upgrade gets.
    enum Arrival: Sendable, Equatable {
        /// Queued for its connect; ``finish()`` is due once it is answered, whatever the answer.
        case queue
        case refuse(Refusal)
    }

    /// What an upgrade whose turn has come does.
    enum Turn: Sendable, Equatable {
        case connect
        case refuse(Refusal)
        /// The connection closed while it waited: nobody is left to answer.
        case skip
    }

    let limits: Limits
    /// Upgrades queued or connecting.
    private(set) var pending = 0

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// An upgrade arrives: queued, or refused without any work.
    mutating func arrive(draining: Bool) -> Arrival {
        if draining { return .refuse(.draining) }
        guard pending < limits.maxPending else { return .refuse(.busy) }
        pending += 1
        return .queue
    }

    /// A queued upgrade's turn has come, after `waitedMs` in the queue.
    func turn(waitedMs: Int64, draining: Bool, connectionOpen: Bool) -> Turn {
        guard connectionOpen else { return .skip }
        if draining { return .refuse(.draining) }
        if waitedMs > limits.maxWaitMs { return .refuse(.late) }
        return .connect
    }

    /// A queued upgrade was answered (or skipped).
    mutating func finish() {
        pending = max(0, pending - 1)
    }

    /// The `Retry-After` of a refusal, in ms: none for a stopping node (another node takes the device now).
    func retryAfterMs(for refusal: Refusal) -> Int64? {
        refusal == .draining ? nil : limits.retryAfterMs
    }

    /// The `outcome` label of a refusal in `statusd_device_upgrades_total`.
    static func outcome(of refusal: Refusal) -> String {
        switch refusal {
        case .draining: "draining"
        case .busy: "busy"
        case .late: "late"
        }
    }
}
