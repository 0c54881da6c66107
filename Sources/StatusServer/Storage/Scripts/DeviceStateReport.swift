import RedisClient
import StatusCore

/// The twin of `Scripts/device_state.lua` (SPEC §10.4 device state, §7 backend heartbeat, §10.1 automatic away): a
/// connected device reports its state and/or heartbeats, and a change is published.
enum DeviceStateReport: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.deviceState }

    typealias Keys = UserStatusKeys

    /// ARGV: deviceId, state ('' = unchanged), heartbeat ('1'), appId, userId, the two status channels.
    struct Arguments: ScriptInput {
        var deviceId: String
        var state: DeviceState?
        var heartbeat: Bool
        var appId: String
        var userId: String

        var strings: [String] {
            [deviceId, state?.rawValue ?? "", heartbeat ? "1" : "0", appId, userId] + BusChannels.statusArguments(appId, userId)
        }
    }

    /// `{found (0|1), changed (0 | 1 status | 2 devices only), <status reply>}`; `USER_NOT_FOUND` is an error reply.
    struct Reply: ScriptReply {
        var found: Bool
        var change: StatusRepository.Change
        var status: StatusReply

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "device_state.lua")
            found = try reader.flag()
            change = try reader.change()
            status = try reader.statusReply()
        }
    }
}
