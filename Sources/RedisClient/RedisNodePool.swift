import Logging
import NIOCore

/// The pipelined connections to one Redis server (a single server, or one master of a cluster), opened lazily and
/// used round-robin; each connection carries many commands at once, matched to their replies in order. A server that
/// went silent (a command timed out) gets one probe call at a time and every other call fails at once, until it
/// answers again (``RedisSilenceGate``).
final class RedisNodePool: Sendable {
    /// The server these connections go to.
    let endpoint: RedisConfiguration.Endpoint
    private let slots: [RedisConnectionSlot]
    private let nextSlotIndex = LockedValue(0)
    private let gate = LockedValue(RedisSilenceGate())

    init(configuration: RedisConfiguration, eventLoopGroup: any EventLoopGroup, logger: Logger, metrics: RedisClientMetrics) {
        self.endpoint = configuration.endpoint
        self.slots = (0..<max(1, configuration.poolSize)).map { _ in
            RedisConnectionSlot(eventLoop: eventLoopGroup.next(), configuration: configuration, logger: logger, metrics: metrics)
        }
    }

    /// Whether the server could not be reached lately: every connection is in its reconnect backoff, or it went
    /// silent.
    var isUnreachable: Bool {
        self.gate.withLock(\.isSilent) || self.slots.allSatisfy(\.isInBackoff)
    }

    /// Sends one encoded command; error replies come back as `.error` values.
    func send(_ bytes: ByteBuffer) async throws -> RedisValue {
        try await self.gated { slot in
            let promise = slot.eventLoop.makePromise(of: RedisValue.self)
            slot.submit(RedisRequest(bytes: bytes, response: .single(promise)))
            return promise.futureResult
        }
    }

    /// Sends `count` encoded commands in one write on one connection; error replies come back as `.error` values.
    func pipeline(_ bytes: ByteBuffer, count: Int) async throws -> [RedisValue] {
        try await self.gated { slot in
            let promise = slot.eventLoop.makePromise(of: [RedisValue].self)
            slot.submit(RedisRequest(bytes: bytes, response: .multiple(count: count, promise)))
            return promise.futureResult
        }
    }

    /// Runs `submit` on the next slot unless the server is silent and this call is not its probe; keeps the gate.
    private func gated<Value>(_ submit: (RedisConnectionSlot) -> EventLoopFuture<Value>) async throws -> Value {
        let admission = self.gate.withLock { $0.admit(at: .now()) }
        if admission == .refuse {
            throw RedisClientError(
                kind: .connectionUnavailable,
                message: "redis has not answered since a command timed out (probed every \(RedisSilenceGate.probeInterval))"
            )
        }
        do {
            let value = try await submit(self.nextSlot()).get()
            self.gate.withLock { $0.answered() }
            return value
        } catch let error as RedisClientError where error.kind == .timeout {
            self.gate.withLock { $0.timedOut(at: .now()) }
            throw error
        } catch {
            if admission == .probe { self.gate.withLock { $0.probeFailed(at: .now()) } }
            throw error
        }
    }

    /// Closes every connection; in-flight calls fail with `.connectionClosed`.
    func close() async {
        let closed = self.slots.map { $0.close() }
        for future in closed {
            try? await future.get()
        }
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
