import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// A pool of pipelined connections. Safe to share across tasks.
///
/// The pool holds `poolSize` connections, opened lazily; calls are spread over them round-robin, and each connection
/// carries many commands at once, matched to their replies in order. See ``RedisConfiguration`` for timeouts and
/// bounds, and ``RedisClientError`` for how failures are reported.
///
/// Run it in a `ServiceGroup` (it closes its connections on graceful shutdown), or call ``close()`` when done.
public final class RedisClient: Sendable, Service {
    private let configuration: RedisConfiguration
    private let slots: [RedisConnectionSlot]
    private let nextSlotIndex = LockedValue(0)
    private let logger: Logger

    /// Creates a client; no connection is opened until the first call.
    public init(
        configuration: RedisConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) {
        self.configuration = configuration
        self.logger = logger
        self.slots = (0..<max(1, configuration.poolSize)).map { _ in
            RedisConnectionSlot(eventLoop: eventLoopGroup.next(), configuration: configuration, logger: logger)
        }
    }

    /// Sends one command; an error reply is thrown as `.server`.
    public func send(_ arguments: [String]) async throws -> RedisValue {
        let value = try await self.sendReturningErrors(arguments)
        if case .error(let message) = value {
            throw RedisClientError(kind: .server, message: message)
        }
        return value
    }

    /// Sends one command; an error reply is thrown as `.server`.
    public func send(_ arguments: String...) async throws -> RedisValue {
        try await self.send(arguments)
    }

    /// Writes all commands in one flush on one connection; error replies come back as `.error` values, not thrown.
    public func pipeline(_ commands: [[String]]) async throws -> [RedisValue] {
        guard !commands.isEmpty else {
            return []
        }
        var bytes = ByteBufferAllocator().buffer(capacity: 64 * commands.count)
        for command in commands {
            guard !command.isEmpty else {
                throw RedisClientError(kind: .protocolError, message: "a pipelined command has no arguments")
            }
            RedisCommandEncoder.encode(command, into: &bytes)
        }
        let slot = self.nextSlot()
        let promise = slot.eventLoop.makePromise(of: [RedisValue].self)
        slot.submit(RedisRequest(bytes: bytes, response: .multiple(count: commands.count, promise)))
        return try await promise.futureResult.get()
    }

    /// EVALSHA with the script's SHA1; on a NOSCRIPT error, SCRIPT LOAD once and retry once.
    public func evalScript(_ script: RedisScript, keys: [String], arguments: [String]) async throws -> RedisValue {
        let command = ["EVALSHA", script.sha1, String(keys.count)] + keys + arguments
        do {
            return try await self.send(command)
        } catch let error as RedisClientError where error.kind == .server && error.message.hasPrefix("NOSCRIPT") {
            self.logger.info("Redis script not loaded, loading it", metadata: ["script": "\(script.name)"])
            try await self.load(script)
            return try await self.send(command)
        }
    }

    /// EVALSHA followed by more commands, all written in one flush on one connection (one round trip): the script's
    /// reply comes first, then one reply per command; error replies come back as `.error` values. On NOSCRIPT the
    /// script is loaded and the whole pipeline sent once more (the commands after it must be safe to repeat: reads).
    public func pipeline(script: RedisScript, keys: [String], arguments: [String], then commands: [[String]]) async throws -> [RedisValue] {
        let all = [["EVALSHA", script.sha1, String(keys.count)] + keys + arguments] + commands
        let replies = try await self.pipeline(all)
        guard case .error(let message) = replies.first, message.hasPrefix("NOSCRIPT") else { return replies }
        self.logger.info("Redis script not loaded, loading it", metadata: ["script": "\(script.name)"])
        try await self.load(script)
        return try await self.pipeline(all)
    }

    /// SCRIPT LOAD each script (used at start-up; failure is not fatal to the caller's design).
    ///
    /// All scripts go in one pipeline; the first refusal is thrown as `.server`.
    public func loadScripts(_ scripts: [RedisScript]) async throws {
        let replies = try await self.pipeline(scripts.map { ["SCRIPT", "LOAD", $0.source] })
        for (script, reply) in zip(scripts, replies) {
            try self.checkLoaded(script, reply: reply)
        }
    }

    /// ServiceLifecycle: waits for graceful shutdown, then closes every connection.
    public func run() async throws {
        // Cancellation ends the wait too; either way the connections are closed.
        try? await gracefulShutdown()
        await self.close()
    }

    /// Closes every connection; in-flight calls fail with .connectionClosed.
    public func close() async {
        let closed = self.slots.map { $0.close() }
        for future in closed {
            try? await future.get()
        }
    }

    private func load(_ script: RedisScript) async throws {
        let reply = try await self.send(["SCRIPT", "LOAD", script.source])
        try self.checkLoaded(script, reply: reply)
    }

    private func checkLoaded(_ script: RedisScript, reply: RedisValue) throws {
        if case .error(let message) = reply {
            throw RedisClientError(kind: .server, message: "SCRIPT LOAD \(script.name): \(message)")
        }
        if reply.string != script.sha1 {
            self.logger.warning(
                "Redis returned another SHA1 for a script",
                metadata: ["script": "\(script.name)", "expected": "\(script.sha1)", "got": "\(reply.string ?? "\(reply)")"]
            )
        }
    }

    private func sendReturningErrors(_ arguments: [String]) async throws -> RedisValue {
        guard !arguments.isEmpty else {
            throw RedisClientError(kind: .protocolError, message: "a command needs at least one argument")
        }
        var bytes = ByteBufferAllocator().buffer(capacity: 64)
        RedisCommandEncoder.encode(arguments, into: &bytes)
        let slot = self.nextSlot()
        let promise = slot.eventLoop.makePromise(of: RedisValue.self)
        slot.submit(RedisRequest(bytes: bytes, response: .single(promise)))
        return try await promise.futureResult.get()
    }

    /// The next slot round-robin, skipping slots in reconnect backoff unless all of them are. A caller running on one
    /// of the pool's event loops gets a slot of that loop when one is usable: its command is written and its reply
    /// resumed on the same thread, with no hop to another one.
    private func nextSlot() -> RedisConnectionSlot {
        let start = self.nextSlotIndex.withLock { index in
            defer { index = (index + 1) % self.slots.count }
            return index
        }
        for offset in 0..<self.slots.count {
            let slot = self.slots[(start + offset) % self.slots.count]
            if slot.eventLoop.inEventLoop && !slot.isInBackoff {
                return slot
            }
        }
        for offset in 0..<self.slots.count {
            let slot = self.slots[(start + offset) % self.slots.count]
            if !slot.isInBackoff {
                return slot
            }
        }
        return self.slots[start]
    }
}
