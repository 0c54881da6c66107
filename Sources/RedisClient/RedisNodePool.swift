import Logging
import NIOCore

/// The pipelined connections to one Redis server (a single server, or one master of a cluster), opened lazily and
/// used round-robin; each connection carries many commands at once, matched to their replies in order.
final class RedisNodePool: Sendable {
    /// The server these connections go to.
    let endpoint: RedisConfiguration.Endpoint
    private let slots: [RedisConnectionSlot]
    private let nextSlotIndex = LockedValue(0)

    init(configuration: RedisConfiguration, eventLoopGroup: any EventLoopGroup, logger: Logger) {
        self.endpoint = configuration.endpoint
        self.slots = (0..<max(1, configuration.poolSize)).map { _ in
            RedisConnectionSlot(eventLoop: eventLoopGroup.next(), configuration: configuration, logger: logger)
        }
    }

    /// Whether every connection is in its reconnect backoff (the server could not be reached lately).
    var isUnreachable: Bool {
        self.slots.allSatisfy(\.isInBackoff)
    }

    /// Sends one encoded command; error replies come back as `.error` values.
    func send(_ bytes: ByteBuffer) async throws -> RedisValue {
        let slot = self.nextSlot()
        let promise = slot.eventLoop.makePromise(of: RedisValue.self)
        slot.submit(RedisRequest(bytes: bytes, response: .single(promise)))
        return try await promise.futureResult.get()
    }

    /// Sends `count` encoded commands in one write on one connection; error replies come back as `.error` values.
    func pipeline(_ bytes: ByteBuffer, count: Int) async throws -> [RedisValue] {
        let slot = self.nextSlot()
        let promise = slot.eventLoop.makePromise(of: [RedisValue].self)
        slot.submit(RedisRequest(bytes: bytes, response: .multiple(count: count, promise)))
        return try await promise.futureResult.get()
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
