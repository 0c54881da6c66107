import RedisClient

/// The twin of `Scripts/status_retire.lua` (SPEC §10.5, versions never go back, across a deletion): removes a deleted
/// user's status hash and keeps its versions, moved past the deletion, for a user created again under the id; the
/// deletion is published as the change it is (SPEC §6).
enum StatusRetire: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.statusRetire }

    /// KEYS: status, the kept versions.
    struct Keys: ScriptInput {
        var user: UserKeys
        var strings: [String] { [user.status, user.retiredVersions] }
    }

    /// How long the versions are kept: a user created again later starts from version 0. Long enough for any watcher
    /// or client of the deleted user to be gone or to have reloaded; bounded, so that an app that creates and deletes
    /// users under ever new ids does not grow Redis for ever.
    static let keepMs: Int64 = 30 * 86_400_000

    /// ARGV: how long the versions are kept (ms), then where the deletion is published (docs/bus.md).
    struct Arguments: ScriptInput {
        var keepMs: Int64 = StatusRetire.keepMs
        var appId: String
        var userId: String
        var strings: [String] { [String(keepMs), appId, userId] + BusChannels.statusArguments(appId, userId) }
    }

    /// The versions kept: where a user created again under the id starts.
    struct Reply: ScriptReply, Equatable {
        var version: Int64
        var publicVersion: Int64
    }
}

extension StatusRetire.Reply {
    /// Decoded from `{version, public version}` (the memberwise initializer stays, for tests).
    init(_ value: RedisValue) throws {
        var reader = try ScriptReplyReader(value, script: "status_retire.lua")
        self.init(version: try reader.integer(), publicVersion: try reader.integer())
        try reader.end()
    }
}
