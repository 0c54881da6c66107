import RedisClient

/// The twin of `Scripts/app_delete_finish.lua` (SPEC §7 admin `DELETE /v1/apps/{appId}`, last step): the claiming run
/// removes the tombstone.
enum AppDeleteFinish: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.appDeleteFinish }

    /// KEYS: deletion tombstone.
    typealias Keys = DeletionTombstoneKeys

    /// ARGV: owner token.
    struct Arguments: ScriptInput {
        var owner: String
        var strings: [String] { [owner] }
    }

    /// `1` removed, `0` the claim was lost to another run (which finishes instead).
    typealias Reply = FlagReply
}
