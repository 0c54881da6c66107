import NIOCore

/// Whether a Redis server is answering, as judged by deadlines (docs/partitions.md): a pure value, times in, verdicts
/// out, kept by each ``RedisNodePool``.
///
/// A command that got no reply within the command timeout means the server (or the path to it) went silent: TCP would
/// not say so for minutes. From then on, one call at a time is let through as a probe, at most every
/// ``probeInterval``; every other call fails at once. Any reply, to the probe or to a call still in flight, means the
/// server answers again. So while Redis is silent a request waits for it at most once (one command timeout), and
/// calls do not pile up behind a server that will not answer.
struct RedisSilenceGate: Sendable, Equatable {
    /// The least time between two probes of a silent server.
    static let probeInterval = TimeAmount.milliseconds(250)

    private enum State: Sendable, Equatable {
        case answering
        /// Silent since a timeout; `probing` while a call let through has not come back; `lastProbe` when the last
        /// probe (or the timeout) ended.
        case silent(probing: Bool, lastProbe: NIODeadline)
    }

    private var state = State.answering

    /// What to do with a call.
    enum Admission: Sendable, Equatable {
        /// Send it.
        case send
        /// Send it as the probe of a silent server: report how it ended with ``probeEnded(answered:at:)``.
        case probe
        /// Fail it at once.
        case refuse
    }

    /// Whether the server is taken for silent.
    var isSilent: Bool { state != .answering }

    /// Admits a call made at `now`.
    mutating func admit(at now: NIODeadline) -> Admission {
        switch state {
        case .answering:
            return .send
        case .silent(let probing, let lastProbe):
            guard !probing, now - lastProbe >= Self.probeInterval else { return .refuse }
            state = .silent(probing: true, lastProbe: lastProbe)
            return .probe
        }
    }

    /// A reply came back (to any call): the server answers.
    mutating func answered() {
        state = .answering
    }

    /// A call got no reply within the command timeout, at `now`.
    mutating func timedOut(at now: NIODeadline) {
        state = .silent(probing: false, lastProbe: now)
    }

    /// The probe failed otherwise (the connection could not be opened, or closed) at `now`: the next may go after
    /// ``probeInterval``.
    mutating func probeFailed(at now: NIODeadline) {
        guard case .silent = state else { return }
        state = .silent(probing: false, lastProbe: now)
    }
}
