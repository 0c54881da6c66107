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
        case .devicesClosed(let appId, let userId, _, _):
            return [["SPUBLISH", BusChannels.user(appId, userId), try JSONCoding.string(message)]]
        case .deleted(let appId, .some(let userId)):
            // On the app slot channel too (the same slot): a node hearing the user through an app-wide scope only must
            // forget what it delivered of them, as it forgets a deleted app's users (whose successors start from
            // version 0).
            let text = try JSONCoding.string(message)
            return [["SPUBLISH", BusChannels.user(appId, userId), text], ["SPUBLISH", BusChannels.appSlot(appId, ofUser: userId), text]]
        case .statusChanged(let change):
            return [["SPUBLISH", BusChannels.user(change.appId, change.status.userId), try JSONCoding.string(message)]]
        case .masked(let appId, let userId, _, _, _):
            // Published by block_side.lua in the step that writes the block; here only for completeness.
            let text = try JSONCoding.string(message)
            return [["SPUBLISH", BusChannels.user(appId, userId), text], ["SPUBLISH", BusChannels.appSlot(appId, ofUser: userId), text]]
        case .configChanged, .deleted(_, .none):
            return [["PUBLISH", BusChannels.control, try JSONCoding.string(message)]]
        }
    }
}
