import Foundation
import Logging
import RedisClient
import StatusCore

/// Publishes ``BusMessage``s on their channels (``BusChannels``). Publishing is best effort after the durable write: a
/// failure is logged, not thrown, because the state in Redis is already right and readers see it.
struct EventBus: Sendable {
    let redis: RedisClient
    let logger: Logger

    /// Publishes one message: about users on their user channels (a relationship change of several users as one
    /// message per user, pipelined), about a whole app on the control channel.
    func publish(_ message: BusMessage) async {
        do {
            _ = try await redis.pipeline(try Self.commands(for: message))
        } catch {
            logger.warning("bus publish failed", metadata: ["error": "\(error)"])
        }
    }

    /// The commands that publish `message`.
    static func commands(for message: BusMessage) throws -> [[String]] {
        switch message {
        case .relationsChanged(let appId, let userIds, let since):
            return try Set(userIds).sorted().map { userId in
                let own = since.filter { $0.key != userId }
                let message = BusMessage.relationsChanged(appId: appId, userIds: [userId], since: own)
                return ["SPUBLISH", BusChannels.user(appId, userId), try JSONCoding.string(message)]
            }
        case .devicesClosed(let appId, let userId, _, _), .deleted(let appId, .some(let userId)):
            return [["SPUBLISH", BusChannels.user(appId, userId), try JSONCoding.string(message)]]
        case .statusChanged(let change):
            return [["SPUBLISH", BusChannels.user(change.appId, change.status.userId), try JSONCoding.string(message)]]
        case .configChanged, .deleted(_, .none):
            return [["PUBLISH", BusChannels.control, try JSONCoding.string(message)]]
        }
    }
}
