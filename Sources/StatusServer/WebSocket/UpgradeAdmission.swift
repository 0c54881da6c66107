/// Which device upgrades a node takes on, decided before any of their work is done: the bound that keeps a reconnect
/// storm (a node drained or killed, its devices all reconnecting to the others) from overwhelming the node that takes it.
///
/// Every connect waits its turn in the node's ``DeviceWorkQueue``. Without a bound on them, a storm larger than the node
/// connects per second queues up until the connects at the back wait longer than the request timeout (10 s): their
/// connections are closed unanswered, each after the node has spent a whole connect on it, the clients retry, and the
/// node spends its time on connects nobody waits for any more. So the upgrades pending (queued or connecting) are
/// bounded by time: as many as the node connects in ``Limits/targetWaitMs`` at the rate it connected over the last
/// second (at least ``Limits/minPending``, at most ``Limits/maxPending``). Past that an upgrade is refused at once,
/// cheaply (503 `UNAVAILABLE`, before its token is read), with a `Retry-After` of the time the node needs to work
/// through what it has pending, so that the client comes back when there is room rather than at once. One whose turn
/// comes after ``Limits/maxWaitMs`` anyway is refused then rather than connected late; one whose connection closed
/// meanwhile is skipped; a node that is stopping refuses them all (SPEC §9).
///
/// A pure type: the gateway holds it under a lock, hands it the time (the system's uptime) and does what it decides.
public struct UpgradeAdmission: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Upgrades queued or connecting past which a new one is refused at once, however fast the node connects
        /// (`--max-pending-connects`).
        public var maxPending = 8_192
        /// Upgrades that may always be pending, before the node has measured how fast it connects.
        var minPending = 256
        /// How long the upgrades pending may take the node to work through, at the rate it connects now: the storm a
        /// node absorbs in one go, first come first served, before it refuses.
        var targetWaitMs: Int64 = 5_000
        /// The longest an upgrade may wait for its turn and still be connected; later it is refused, as the client may
        /// well have given up (and its request timeout, counted from its first byte, would soon close it unanswered).
        var maxWaitMs: Int64 = 8_000
        /// The bounds of a refusal's `Retry-After`.
        var retryAfterMs: ClosedRange<Int64> = 1_000...10_000

        public init() {}
    }

    /// Why an upgrade is refused with 503.
    enum Refusal: Sendable, Equatable {
        /// The node is stopping (SPEC §9): reconnect through another node.
        case draining
        /// As many upgrades are pending as the node can work through in time.
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
    /// Turns (connects begun) per second over the last whole second measured; nil before one was, or once none came
    /// for a second.
    private var rate: Int?
    /// The current second of turns: when it began (ms) and the turns in it.
    private var second: (startMs: Int64, turns: Int) = (0, 0)

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// The upgrades that may be pending now.
    func bound(nowMs: Int64) -> Int {
        let measured = currentRate(nowMs: nowMs).map { Int(Int64($0) * limits.targetWaitMs / 1_000) } ?? 0
        return min(limits.maxPending, max(limits.minPending, measured))
    }

    /// An upgrade arrives: queued, or refused without any work.
    mutating func arrive(draining: Bool, nowMs: Int64) -> Arrival {
        if draining { return .refuse(.draining) }
        guard pending < bound(nowMs: nowMs) else { return .refuse(.busy) }
        pending += 1
        return .queue
    }

    /// A queued upgrade's turn has come, after `waitedMs` in the queue; counted in the rate when it connects.
    mutating func turn(waitedMs: Int64, draining: Bool, connectionOpen: Bool, nowMs: Int64) -> Turn {
        guard connectionOpen else { return .skip }
        if draining { return .refuse(.draining) }
        if waitedMs > limits.maxWaitMs { return .refuse(.late) }
        count(nowMs: nowMs)
        return .connect
    }

    /// A queued upgrade was answered (or skipped).
    mutating func finish() {
        pending = max(0, pending - 1)
    }

    /// The `Retry-After` of a refusal, in ms: the time the node needs for what it has pending at its current rate, within
    /// ``Limits/retryAfterMs``; none for a stopping node (another node takes the device now).
    func retryAfterMs(for refusal: Refusal, nowMs: Int64) -> Int64? {
        guard refusal != .draining else { return nil }
        let needed = currentRate(nowMs: nowMs).map { Int64(pending) * 1_000 / Int64(max(1, $0)) } ?? limits.retryAfterMs.lowerBound
        return min(max(needed, limits.retryAfterMs.lowerBound), limits.retryAfterMs.upperBound)
    }

    /// The `outcome` label of a refusal in `statusd_device_upgrades_total`.
    static func outcome(of refusal: Refusal) -> String {
        switch refusal {
        case .draining: "draining"
        case .busy: "busy"
        case .late: "late"
        }
    }

    private mutating func count(nowMs: Int64) {
        let elapsed = nowMs - second.startMs
        if elapsed >= 1_000 {
            // The second that ended, if it was the one just before this (else nothing came for a while).
            rate = elapsed < 2_000 ? second.turns * 1_000 / Int(elapsed) : nil
            second = (nowMs, 0)
        }
        second.turns += 1
    }

    /// ``rate`` while it is recent: nil once no turn has come for two seconds.
    private func currentRate(nowMs: Int64) -> Int? {
        guard let rate, nowMs - second.startMs < 2_000 else { return nil }
        return max(rate, second.turns)
    }
}
