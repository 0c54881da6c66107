import RedisClient

/// The twin of `Scripts/profile_put.lua` (SPEC §7 `PUT /users/{userId}`): creates or replaces a profile in one step,
/// with its token generation and the status hash's read copy.
enum ProfilePut: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.profilePut }

    /// KEYS: profile, status, devices, the versions a deleted user left (``UserKeys/retiredVersions``).
    struct Keys: ScriptInput {
        var user: UserKeys
        var strings: [String] { [user.profile, user.status, user.devices, user.retiredVersions] }
    }

    /// ARGV: now ms, new generation (used only when the user is created), then field/value pairs.
    struct Arguments: ScriptInput {
        var nowMs: Int64
        var generation: String
        var fields: [(name: String, value: String)]

        var strings: [String] {
            var strings = [String(nowMs), generation]
            strings.reserveCapacity(2 + 2 * fields.count)
            for field in fields { strings += [field.name, field.value] }
            return strings
        }
    }

    /// `{created (0|1), createdAt}`.
    struct Reply: ScriptReply {
        var created: Bool
        /// As stored (epoch ms).
        var createdAt: String

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "profile_put.lua")
            created = try reader.flag()
            createdAt = try reader.string()
            try reader.end()
        }
    }
}
