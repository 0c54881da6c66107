import RedisClient

/// The twin of `Scripts/status_retire.lua` (SPEC §10.5, versions never go back, across a deletion): removes a deleted
/// user's status hash and keeps its versions, moved past the deletion, for a user created again under the id.
enum StatusRetire: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.statusRetire }

    /// KEYS: status, the kept versions.
    struct Keys: ScriptInput {
        var user: UserKeys
        var strings: [String] { [user.status, user.retiredVersions] }
    }

    /// No ARGV.
    struct Arguments: ScriptInput {
        var strings: [String] { [] }
    }

    /// The versions kept: where a user created again under the id starts.
    struct Reply: ScriptReply, Equatable {
        var version: Int64
        var publicVersion: Int64

        init(version: Int64, publicVersion: Int64) {
            self.version = version
            self.publicVersion = publicVersion
        }

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "status_retire.lua")
            version = try reader.integer()
            publicVersion = try reader.integer()
            try reader.end()
        }
    }
}
