import RedisClient
import Synchronization

/// SPEC §7: a refused request changes nothing, then or later. A call whose reply did not come within the command
/// timeout is reported failed (`UNAVAILABLE`) and its connection aborted, which drops what the kernel had not sent; but
/// bytes already on a silent network path can still reach Redis when the path comes back, seconds later, over writes
/// acknowledged meanwhile. So every script call carries a deadline on Redis's own clock (the first argument, read by
/// `lib.lua` before anything else): the moment its caller gives up on it. A call that reaches Redis after its deadline
/// changes nothing and answers `STATUSD_LATE`.
///
/// The node measures how far each Redis server's clock is from its own monotonic clock (``RedisClockEstimate``) from
/// the `TIME` it reads of every master each third of a lease, so the deadline holds whatever the node's wall clock
/// says. The masters of a cluster run on hosts of their own, whose clocks need not agree: a call is fenced on the clock
/// of the master that runs it (``ServerClocks``). Until the first measure the fence is open (deadline 0).
final class WriteFence: Sendable {
    /// How long after it is made a call may still be applied: the command timeout, when its caller hears it failed.
    let budget: Duration
    private let clocks = Mutex(ServerClocks())

    init(budget: Duration) {
        self.budget = budget
    }

    /// A fence that never refuses (tests that run scripts without a node).
    static var open: WriteFence { WriteFence(budget: .zero) }

    /// The deadline of a call made now to `server`, in epoch milliseconds of that server's clock; 0 while no clock is
    /// known. `nil`, or a server not measured yet: the clock measured last.
    func deadlineMs(at server: RedisConfiguration.Endpoint? = nil, now: ContinuousClock.Instant = .now) -> Int64 {
        guard budget > .zero, let estimate = clocks.withLock({ $0.estimate(of: server) }) else { return 0 }
        return estimate.fence(callMadeAt: now, budget: budget)
    }

    /// Records a `TIME` reply (`redisMs`) of `server` to a command sent at `sent` and answered at `received`. Returns
    /// whether the measure is precise enough to keep (``RedisClockEstimate/isPrecise``): the caller reads again if not.
    @discardableResult
    func observe(server: RedisConfiguration.Endpoint, redisMs: Int64, sent: ContinuousClock.Instant, received: ContinuousClock.Instant) -> Bool {
        let sample = RedisClockEstimate(redisMs: redisMs, sent: sent, received: received)
        clocks.withLock { $0.observe(sample, of: server) }
        return sample.isPrecise
    }

    /// The estimate of `server`'s clock in use (``ServerClocks/estimate(of:)``).
    func estimate(of server: RedisConfiguration.Endpoint?) -> RedisClockEstimate? {
        clocks.withLock { $0.estimate(of: server) }
    }
}

/// The clock of each Redis server the node has measured. Pure.
struct ServerClocks: Sendable, Equatable {
    private var estimates: [RedisConfiguration.Endpoint: RedisClockEstimate] = [:]
    private var latest: RedisConfiguration.Endpoint?

    /// The estimate of `server`'s clock; of the server measured last when `server` is nil or was never measured (a
    /// master that took over since the last reading, until the next one), nil when none was.
    func estimate(of server: RedisConfiguration.Endpoint?) -> RedisClockEstimate? {
        if let server, let estimate = estimates[server] { return estimate }
        return latest.flatMap { estimates[$0] }
    }

    /// Takes a measure of `server`'s clock (``RedisClockEstimate/updated(with:)``).
    mutating func observe(_ sample: RedisClockEstimate, of server: RedisConfiguration.Endpoint) {
        estimates[server] = estimates[server].map { $0.updated(with: sample) } ?? sample
        latest = server
    }
}

/// Where Redis's clock stands against this node's monotonic clock, as measured by one `TIME` round trip: Redis read
/// its clock somewhere between the send and the reply, so the offset is known to within half the round trip. Pure.
struct RedisClockEstimate: Sendable, Equatable {
    /// Redis's epoch milliseconds minus the node's monotonic milliseconds, at the round trip's midpoint.
    let offsetMs: Int64
    /// Half the round trip: how far the offset may be off either way.
    let errorMs: Int64
    /// When it was measured, on the node's monotonic clock.
    let measuredAt: ContinuousClock.Instant

    /// Redis's clock may drift from the node's between measures by this much per second (NTP slews at most 0.5 ms/s).
    static let driftPerSecondMs: Int64 = 1

    init(offsetMs: Int64, errorMs: Int64, measuredAt: ContinuousClock.Instant) {
        self.offsetMs = offsetMs
        self.errorMs = errorMs
        self.measuredAt = measuredAt
    }

    init(redisMs: Int64, sent: ContinuousClock.Instant, received: ContinuousClock.Instant) {
        let roundTripMs = max(0, (received - sent).inMilliseconds)
        let midpoint = sent + .milliseconds(roundTripMs / 2)
        self.init(offsetMs: redisMs - Self.milliseconds(midpoint), errorMs: (roundTripMs + 1) / 2, measuredAt: midpoint)
    }

    /// The uncertainty past which a measure is taken again at once (``NodeStore/readClocks()``). The fence counts the
    /// uncertainty against every call, so a `TIME` answered after a long round trip (a node or Redis busy for a moment,
    /// a connection just opened) would shorten the budget of every call until the next reading, a third of a lease
    /// later: a round trip of a second leaves a call of a 1.5 s budget half a second to reach Redis.
    static let preciseErrorMs: Int64 = 25

    /// Whether the measure is as precise as the fence wants (``preciseErrorMs``).
    var isPrecise: Bool { errorMs <= Self.preciseErrorMs }

    /// The later measure, unless it is much less precise than the current one, which ages by its drift allowance.
    func updated(with sample: RedisClockEstimate) -> RedisClockEstimate {
        let agedError = errorMs + Self.drift(from: measuredAt, to: sample.measuredAt)
        return sample.errorMs <= agedError ? sample : self
    }

    /// The latest moment on Redis's clock at which a call made at `callMadeAt` may be applied: by then, on every clock
    /// Redis's could be, its caller has given up on it (the uncertainty counts against the call, never for it).
    func fence(callMadeAt: ContinuousClock.Instant, budget: Duration) -> Int64 {
        let uncertainty = errorMs + Self.drift(from: measuredAt, to: callMadeAt)
        return Self.milliseconds(callMadeAt) + offsetMs + budget.inMilliseconds - uncertainty
    }

    private static func drift(from: ContinuousClock.Instant, to: ContinuousClock.Instant) -> Int64 {
        max(0, (to - from).inMilliseconds) * driftPerSecondMs / 1000 + 1
    }

    /// Milliseconds of the monotonic clock from a fixed origin.
    static func milliseconds(_ instant: ContinuousClock.Instant) -> Int64 {
        (instant - origin).inMilliseconds
    }

    private static let origin = ContinuousClock.now - .seconds(86_400)
}
