import Logging
import StatusCore

/// Publishes ``BusMessage``s on their channels (``BusChannels``) through ``BusPublisher``. Publishing is best effort
/// after the durable write: a failure is logged, not thrown, because the state in Redis is already right and readers
/// see it.
struct EventBus: Sendable {
    let publisher: BusPublisher
    let logger: Logger

    /// Publishes one message: about users on their user channels (a relationship change of several users as one
    /// message per user, pipelined), about a whole app on the control channel.
    func publish(_ message: BusMessage) async {
        do {
            try await publisher.publish(message)
        } catch {
            logger.warning("bus publish failed", metadata: ["error": "\(error)"])
        }
    }
}
