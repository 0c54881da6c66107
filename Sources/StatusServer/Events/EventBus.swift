import Foundation
import Logging
import RedisClient
import StatusCore

/// Publishes ``BusMessage``s. Publishing is best effort after the durable write: a failure is logged, not thrown,
/// because the state in Redis is already right and readers see it.
struct EventBus: Sendable {
    let redis: RedisClient
    let logger: Logger

    /// Publishes one message.
    func publish(_ message: BusMessage) async {
        do {
            let payload = try JSONCoding.string(message)
            _ = try await redis.send("PUBLISH", BusMessage.channel, payload)
        } catch {
            logger.warning("bus publish failed", metadata: ["error": "\(error)"])
        }
    }
}
