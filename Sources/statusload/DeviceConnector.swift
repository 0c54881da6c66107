import Foundation
import NIOCore
import NIOPosix

/// Opens the devices' WebSocket connections on a small group of event loops (device `d` on loop `d mod loops`, so
/// its handler and counters never leave that loop) and reconnects a device the loader dropped. No task or stream per
/// device: a connection is a channel with one ``DeviceHandler``.
final class DeviceConnector: Sendable {
    /// Where one node's devices connect.
    struct Endpoint: Sendable {
        var address: SocketAddress
        /// The `Host` header.
        var host: String
        /// The request path, `/v1/connect`.
        var path: String
        /// Query parameters every connect adds after the device's own (`&snapshot=true`, SPEC §10.6).
        var options = ""

        /// `http://host:port[/prefix]` → the node's `/v1/connect`, with the host resolved once; `snapshot` asks for a
        /// snapshot on every connect.
        init(url: String, snapshot: Bool = false) throws {
            guard let components = URLComponents(string: url), let host = components.host else {
                throw SetupError("bad --url \(url)")
            }
            let port = components.port ?? (components.scheme == "https" ? 443 : 80)
            address = try SocketAddress.makeAddressResolvingHost(host, port: port)
            self.host = "\(host):\(port)"
            let prefix = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
            path = prefix + "/v1/connect"
            if snapshot { options = "&snapshot=true" }
        }
    }

    /// How devices fail over (`--failover`): a device whose server closes it with 1012 or 1013, or whose connection
    /// ends without a close frame (its node went away), reconnects to another node after a random jitter, presenting
    /// its resume token: device d on node k of N goes to node (k + 1 + d mod (N − 1)) mod N, so that a node's devices
    /// spread over all the others. An attempt that fails (refused, or not upgraded) tries the node after that, again
    /// after a jitter, until it is welcomed or the run stops.
    struct Failover: Sendable {
        /// The jitter's upper bound, ms (each wait is uniform in 0...jitterMs, plus 100 ms per failed attempt, at most
        /// 1 s more).
        var jitterMs: Double
    }

    let registry: DeviceRegistry
    let stats: LoadStats
    let failover: Failover?
    /// Per device, what it has seen of the users it watches (with `--failover`), else empty.
    let watches: [DeviceWatch?]
    private let loops: [any EventLoop]
    private let endpoints: [Endpoint]
    private let tokens: [String]

    init(
        loops: [any EventLoop],
        endpoints: [Endpoint],
        tokens: [String],
        registry: DeviceRegistry,
        stats: LoadStats,
        failover: Failover? = nil,
        watches: [DeviceWatch?] = []
    ) {
        self.loops = loops
        self.endpoints = endpoints
        self.tokens = tokens
        self.registry = registry
        self.stats = stats
        self.failover = failover
        self.watches = watches
    }

    /// The watch of device `device`, if it has one.
    func watch(_ device: Int) -> DeviceWatch? { device < watches.count ? watches[device] : nil }

    /// Starts device `device`'s first connection; the caller has counted it with ``DeviceRegistry/beginFirstAttempt()``.
    func start(device: Int) {
        connect(device: device, first: true, node: registry.node(of: device), lostAt: nil, attempt: 0)
    }

    /// Opens a connection of `device` to `node`. `lostAt` (monotonic ns) is set for a failover reconnect: when the
    /// device lost its connection; `attempt` counts the failed attempts since.
    private func connect(device: Int, first: Bool, node: Int, lostAt: UInt64?, attempt: Int) {
        let index = device % loops.count
        let loop = loops[index]
        let loopStats = stats.loops[index]
        let user = registry.user(of: device)
        let endpoint = endpoints[node]
        let resume = lostAt == nil ? "" : watch(device)?.resume.map { "&resume=\($0)" } ?? ""
        let target = "\(endpoint.path)?deviceId=d\(device)&platform=web&token=\(tokens[user])\(endpoint.options)\(resume)"
        let registry = registry
        let started = MonotonicClock.nanos()
        registry.beginAttempt()
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = DeviceHandler(
                        device: device,
                        user: user,
                        node: node,
                        first: first,
                        started: started,
                        lostAt: lostAt,
                        attempt: attempt,
                        target: target,
                        host: endpoint.host,
                        stats: loopStats,
                        connector: self
                    )
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(to: endpoint.address)
            .whenFailure { error in
                // The socket never opened, so its handler saw no channelInactive.
                loopStats.recordConnectFailure()
                if first { registry.endFirstAttempt() }
                registry.endAttempt()
                if let lostAt {
                    loopStats.recordReconnectAttemptFailed(error)
                    self.failOver(device: device, from: node, lostAt: lostAt, attempt: attempt + 1, on: loop)
                }
            }
    }

    /// A connection that had opened has closed (on its loop): a device the loader dropped reconnects at once; one the
    /// server closed by itself is counted as dropped and stays away, unless it fails over (`--failover`: closed with
    /// 1012 or 1013 or without a close frame, or a failover attempt that was not welcomed).
    func attemptEnded(
        device: Int,
        node: Int,
        welcomed: Bool,
        dropRequested: Bool,
        closeCode: UInt16?,
        retryAfterMs: Int? = nil,
        lostAt: UInt64?,
        attempt: Int,
        stats: LoopStats
    ) {
        defer { registry.endAttempt() }
        guard !registry.isStopping else { return }
        if failover != nil, !dropRequested {
            let loop = loops[device % loops.count]
            if welcomed, closeCode == nil || closeCode == 1012 || closeCode == 1013 {
                stats.recordServerClose(code: closeCode)
                failOver(device: device, from: node, lostAt: MonotonicClock.nanos(), attempt: 0, on: loop)
                return
            }
            if !welcomed, let lostAt {
                stats.recordReconnectAttemptFailed(nil)
                failOver(device: device, from: node, lostAt: lostAt, attempt: attempt + 1, after: retryAfterMs, on: loop)
                return
            }
        }
        guard welcomed else { return }
        guard dropRequested else {
            stats.recordDrop()
            return
        }
        connect(device: device, first: false, node: node, lostAt: nil, attempt: 0)
    }

    /// Reconnects `device`, after the failover's jitter, to another node than `from`: its own choice among the others
    /// when it has just lost its connection, the node after `from` when an attempt failed. An attempt refused with a
    /// `Retry-After` (a busy node's 503) waits that long first, as a client should, spread by the jitter over up to
    /// half as long again.
    private func failOver(device: Int, from node: Int, lostAt: UInt64, attempt: Int, after retryAfterMs: Int? = nil, on loop: any EventLoop) {
        guard let failover, !registry.isStopping else { return }
        let step = attempt == 0 ? 1 + device % max(endpoints.count - 1, 1) : 1
        let next = (node + step) % endpoints.count
        let bound = failover.jitterMs + min(Double(attempt) * 100, 1000) + Double(retryAfterMs ?? 0) / 2
        let wait = Double(retryAfterMs ?? 0) + (bound > 0 ? Double.random(in: 0...bound) : 0)
        loop.scheduleTask(in: .microseconds(Int64(wait * 1000))) {
            guard !self.registry.isStopping else { return }
            self.connect(device: device, first: false, node: next, lostAt: lostAt, attempt: attempt)
        }
    }
}
