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

    let registry: DeviceRegistry
    let stats: LoadStats
    private let loops: [any EventLoop]
    private let endpoints: [Endpoint]
    private let tokens: [String]

    init(loops: [any EventLoop], endpoints: [Endpoint], tokens: [String], registry: DeviceRegistry, stats: LoadStats) {
        self.loops = loops
        self.endpoints = endpoints
        self.tokens = tokens
        self.registry = registry
        self.stats = stats
    }

    /// Starts device `device`'s first connection; the caller has counted it with ``DeviceRegistry/beginFirstAttempt()``.
    func start(device: Int) {
        connect(device: device, first: true)
    }

    private func connect(device: Int, first: Bool) {
        let index = device % loops.count
        let loop = loops[index]
        let loopStats = stats.loops[index]
        let node = registry.node(of: device)
        let user = registry.user(of: device)
        let endpoint = endpoints[node]
        let target = "\(endpoint.path)?deviceId=d\(device)&platform=web&token=\(tokens[user])\(endpoint.options)"
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
                        target: target,
                        host: endpoint.host,
                        stats: loopStats,
                        connector: self
                    )
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(to: endpoint.address)
            .whenFailure { _ in
                // The socket never opened, so its handler saw no channelInactive.
                loopStats.recordConnectFailure()
                if first { registry.endFirstAttempt() }
                registry.endAttempt()
            }
    }

    /// A connection that had opened has closed (on its loop): a device the loader dropped reconnects at once; one the
    /// server closed by itself is counted as dropped and stays away.
    func attemptEnded(device: Int, welcomed: Bool, dropRequested: Bool, stats: LoopStats) {
        defer { registry.endAttempt() }
        guard welcomed, !registry.isStopping else { return }
        guard dropRequested else {
            stats.recordDrop()
            return
        }
        connect(device: device, first: false)
    }
}
