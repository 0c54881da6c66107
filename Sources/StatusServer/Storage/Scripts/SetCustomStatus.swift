import RedisClient
import StatusCore

/// The twin of `Scripts/set_custom_status.lua` (SPEC §4 setSelfStatus, §10.1 availability, §10.2 expiry, §10.5
/// public view): sets or clears the caller's custom status and/or availability, and publishes the change.
enum SetCustomStatus: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.setCustomStatus }

    typealias Keys = UserStatusKeys

    /// ARGV: value ('' clears), appId, userId, the two status channels, keep, availability, customStatusExpiresAt,
    /// grace ms.
    struct Arguments: ScriptInput {
        var value: String?
        var appId: String
        var userId: String
        /// The request left customStatus out: it stays as it is.
        var keep: Bool
        /// Nil: left out, kept.
        var availability: Availability?
        /// Nil: none (the caller wrote the due-time index entry first when there is one).
        var expiresAt: Int64?
        /// SPEC §10.5: becoming invisible while seen online shows this long later (0: at once); the caller wrote the
        /// grace index entry first when it is not 0.
        var graceMs: Int64 = 0

        var strings: [String] {
            [value ?? "", appId, userId] + BusChannels.statusArguments(appId, userId)
                + [keep ? "1" : "0", availability?.rawValue ?? "", expiresAt.map(String.init) ?? "", String(graceMs)]
        }
    }

    /// `{changed (0|1), public view changed (0|1), previous availability ('' = available), custom status changed (0|1),
    /// <status reply>}`; `USER_NOT_FOUND` is an error reply.
    struct Reply: ScriptReply {
        var change: StatusRepository.Change
        var publicChange: Bool
        /// A value this version does not know counts as available, as everywhere.
        var previousAvailability: Availability
        var customStatusChanged: Bool
        var status: StatusReply

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "set_custom_status.lua")
            change = try reader.change()
            publicChange = try reader.flag()
            previousAvailability = try reader.optionalString().flatMap(Availability.init(rawValue:)) ?? .available
            customStatusChanged = try reader.flag()
            status = try reader.statusReply()
        }
    }
}
