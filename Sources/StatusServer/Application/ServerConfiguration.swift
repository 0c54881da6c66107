import Foundation
import RedisClient

/// How one statusd node runs.
public struct ServerConfiguration: Sendable {
    /// The address to listen on.
    public var host: String
    /// The port to listen on (0 picks a free one).
    public var port: Int
    /// Where Redis is.
    public var redis: RedisConfiguration
    /// The admin API's bearer key.
    public var adminKey: String
    /// This node's unique id (its lease and its devices are filed under it).
    public var nodeId: String
    /// How long a node's lease lasts without renewal; survivors clean up after a node silent for this long.
    public var nodeLeaseSeconds: Int
    /// Bytes of events a device may have waiting (its socket full) before it is disconnected as too slow.
    public var sessionBacklogBytes: Int
    /// Bus messages a node buffers before it drops them and resynchronises (docs/delivery.md).
    public var busInboxLimit: Int
    /// Seconds an HTTP connection may stay idle (no request in progress) before it is closed.
    public var httpIdleTimeoutSeconds: Int64
    /// How long a request may take to arrive whole, from its first byte (SPEC §7: 10 s, then 408 and the connection is
    /// closed). Tests shorten it.
    public var requestTimeout: Duration
    /// How often the node looks for silent devices (their heartbeat timeout) and renews its lease bookkeeping.
    public var housekeepingInterval: Duration
    /// How webhooks are delivered and how many each app may have queued (tests shorten or shrink them).
    var webhookDispatch = WebhookDispatchSettings()
    /// The most users a resume reads from an app's log of recent changes; past it the resume sends a snapshot instead
    /// (``SessionSnapshot``). Lowered by tests.
    var resumeLogReadLimit = RecentChanges.readLimit
    /// The most users of an `all`/`roles:` scope a snapshot lists (SPEC §10.6: 1,000). Lowered by tests.
    var snapshotScopeLimit = SessionSnapshot.scopeLimit
    /// Where the node reads its own time (``NodeClock``): the system's, or one a test drives.
    public var clock: any NodeClock
    /// The port of the operator listener that serves `/metrics` without credentials (nil: none; the public listener's
    /// `/metrics` asks for the admin key either way).
    public var metricsPort: Int?
    /// The address of the operator listener (loopback by default: reachable from the node's own host only).
    public var metricsHost = "127.0.0.1"
    /// How the node drains when asked to stop (SPEC §9): run by a ``NodeDrainService`` beside the application.
    public var drain = NodeDrain()
    /// Device upgrades queued or connecting past which a new one is refused at once with 503 and `Retry-After`, however
    /// fast the node connects (``UpgradeAdmission``, which bounds them by time below this).
    public var maxPendingConnects = UpgradeAdmission.Limits().maxPending
    /// The listening socket's backlog: connections the kernel completes and holds while the node has not accepted them
    /// yet (capped by `net.core.somaxconn`). A full backlog drops the next connect silently and the client retries it
    /// only after a second or more, so it is sized for a reconnect storm's burst, not for steady traffic.
    public var listenBacklog = 4096
    /// Device connects run at the same time (``DeviceGateway/connects``): more absorb a reconnect storm sooner, fewer
    /// leave more of the node's concurrency pool to the deliveries and requests of the devices already connected.
    public var connectConcurrency = 96

    /// Creates a configuration.
    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        redis: RedisConfiguration,
        adminKey: String,
        nodeId: String = "node-" + UUID().uuidString.prefix(8).lowercased(),
        nodeLeaseSeconds: Int = 15,
        sessionBacklogBytes: Int = 256 * 1024,
        housekeepingInterval: Duration = .milliseconds(500),
        httpIdleTimeoutSeconds: Int64 = 60,
        requestTimeout: Duration = .seconds(10),
        busInboxLimit: Int = 65_536,
        clock: any NodeClock = SystemNodeClock()
    ) {
        self.host = host
        self.port = port
        self.redis = redis
        self.adminKey = adminKey
        self.nodeId = nodeId
        self.nodeLeaseSeconds = nodeLeaseSeconds
        self.sessionBacklogBytes = sessionBacklogBytes
        self.housekeepingInterval = housekeepingInterval
        self.httpIdleTimeoutSeconds = httpIdleTimeoutSeconds
        self.requestTimeout = requestTimeout
        self.busInboxLimit = busInboxLimit
        self.clock = clock
    }

    /// ``redis`` as this node uses it: its connections named `statusd-<nodeId>` (`CLIENT SETNAME`, characters other than
    /// letters, digits, `-`, `_` and `.` as `_`) unless a name was configured, so that `CLIENT LIST` tells the nodes'
    /// connections apart and one node's can be killed alone (`CLIENT KILL` by id, as the fault tests do).
    var nodeRedis: RedisConfiguration {
        var redis = self.redis
        if redis.clientName == nil {
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
            redis.clientName = "statusd-" + String(nodeId.map { allowed.contains($0) ? $0 : "_" })
        }
        return redis
    }
}
