/// When the leader of a group commit waits a moment before it writes, so that the writes arriving meanwhile go in its
/// batch. A batch only grows while a write is in flight, and a write to Redis on loopback is over in a fraction of a
/// millisecond: under churn (thousands of connects a second) most batches were of one, and every connect and departure
/// paid a script call of its own. Lingering is for a busy node only, one whose last batch ended moments ago: a write
/// after a quiet spell goes at once.
struct GroupCommitLinger: Sendable, Equatable {
    /// How long a leader waits for company.
    var linger: Duration
    /// A node is busy when its last batch ended at most this long ago.
    var busyWindow: Duration

    /// No lingering at all: every leader writes at once.
    static let none = GroupCommitLinger(linger: .zero, busyWindow: .zero)

    /// The writes of connects and departures to the app's online index: a leader waits 1 ms when the
    /// last batch ended at most 2 ms ago, which only a node doing hundreds of them a second sees. Only a departure's
    /// write lingers (``GroupCommit/commit(_:group:mayLinger:)``): nobody waits on it, where a connect's welcome
    /// follows its writes. A connect arriving while a departure lingers joins that batch.
    static let churn = GroupCommitLinger(linger: .milliseconds(1), busyWindow: .milliseconds(2))

    /// The removals from the node's device list, which nobody waits on (a removal follows a departure already filed,
    /// and until it is written the session stays indexed, so the node's reconciliation never files it again): a
    /// leader waits 20 ms when the last batch ended at most 250 ms ago, so that a node with a few departures a second
    /// or more writes them a handful at a time.
    static let removals = GroupCommitLinger(linger: .milliseconds(20), busyWindow: .milliseconds(250))

    /// Whether a leader lingers, given how long ago the last batch ended (nil: none ended yet).
    func lingers(sinceLastWrite: Duration?) -> Bool {
        guard linger > .zero, let sinceLastWrite else { return false }
        return sinceLastWrite <= busyWindow
    }
}
