import Logging
import NIOCore
import NIOPosix

/// Opens channels to the configured endpoint and prepares command connections (AUTH, CLIENT SETNAME, SELECT).
enum RedisConnector {
    /// Connects on `eventLoop` with TCP_NODELAY (and SO_KEEPALIVE for TCP); `initializer` adds the handlers.
    static func connect(
        configuration: RedisConfiguration,
        eventLoop: any EventLoop,
        initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<any Channel> {
        var bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(TimeAmount(configuration.connectTimeout))
            .channelInitializer(initializer)
        switch configuration.endpoint {
        case .tcp(let host, let port):
            bootstrap = bootstrap.channelOption(.socketOption(.so_keepalive), value: 1)
            return bootstrap.connect(host: host, port: port)
        case .unixSocket(let path):
            return bootstrap.connect(unixDomainSocketPath: path)
        }
    }

    /// Opens a command connection: connects, adds a ``RedisCommandHandler``, then sends AUTH, CLIENT SETNAME and SELECT
    /// when configured.
    /// A failure is reported as `.connectionUnavailable`, and the channel is closed.
    static func connectCommandChannel(
        configuration: RedisConfiguration,
        eventLoop: any EventLoop,
        logger: Logger
    ) -> EventLoopFuture<any Channel> {
        let commandTimeout = TimeAmount(configuration.commandTimeout)
        let maxPending = configuration.maxPendingPerConnection
        let connected = self.connect(configuration: configuration, eventLoop: eventLoop) { channel in
            channel.eventLoop.makeCompletedFuture {
                let handler = RedisCommandHandler(commandTimeout: commandTimeout, maxPending: maxPending, logger: logger)
                try channel.pipeline.syncOperations.addHandler(handler)
            }
        }
        return connected.flatMapErrorThrowing { error in
            throw RedisClientError(
                kind: .connectionUnavailable,
                message: "cannot connect to redis at \(configuration.endpoint.logDescription): \(error)"
            )
        }.flatMap { channel in
            self.prepare(channel: channel, configuration: configuration).map { channel }.flatMapError { error in
                channel.close(promise: nil)
                return channel.eventLoop.makeFailedFuture(error)
            }
        }
    }

    /// Sends AUTH, CLIENT SETNAME and SELECT as configured, pipelined, and fails if any is refused.
    private static func prepare(channel: any Channel, configuration: RedisConfiguration) -> EventLoopFuture<Void> {
        let commands = configuration.setupCommands(selecting: true)
        guard !commands.isEmpty else {
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        var bytes = channel.allocator.buffer(capacity: 64)
        for command in commands {
            RedisCommandEncoder.encode(command, into: &bytes)
        }
        let promise = channel.eventLoop.makePromise(of: [RedisValue].self)
        channel.writeAndFlush(RedisRequest(bytes: bytes, response: .multiple(count: commands.count, promise)), promise: nil)
        return promise.futureResult.flatMapThrowing { replies in
            for case .error(let message) in replies {
                throw RedisClientError(
                    kind: .connectionUnavailable,
                    message: "redis refused the connection setup (AUTH, CLIENT SETNAME or SELECT): \(message)"
                )
            }
        }.flatMapErrorThrowing { error in
            guard let error = error as? RedisClientError, error.kind == .connectionUnavailable else {
                throw RedisClientError(kind: .connectionUnavailable, message: "redis connection setup failed: \(error)")
            }
            throw error
        }
    }
}

extension RedisConfiguration.Endpoint {
    /// `host:port` or the socket path, for logs and error messages.
    var logDescription: String {
        switch self {
        case .tcp(let host, let port):
            return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unixSocket(let path):
            return path
        }
    }
}
