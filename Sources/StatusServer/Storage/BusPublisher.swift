import RedisClient

/// The sending side of the bus: the `SPUBLISH`/`PUBLISH` commands of a ``BusMessage`` on its channels
/// (``BusChannels``), pipelined in one round trip. ``EventBus`` decides that publishing is best effort; this type only
/// writes. Status changes are not published here: the script that writes a change publishes it in the same step.
struct BusPublisher: Sendable {
    let redis: RedisClient

    /// Publishes `message`: about users on their user channels (a relationship change of several users as one message
    /// per user, pipelined), about a whole app on the control channel.
    func publish(_ message: BusMessage) async throws {
        _ = try await redis.pipeline(try Self.commands(for: message))
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
