import RedisClient

/// The twin of `Scripts/app_delete_mark.lua` (SPEC §7 admin `DELETE /v1/apps/{appId}`, step 1 of a crash-safe
/// deletion): swaps the app record for a tombstone claimed by the deleting run.
enum AppDeleteMark: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.appDeleteMark }

    /// KEYS: app record, deletion tombstone.
    struct Keys: ScriptInput {
        var app: RedisKeys
        var strings: [String] { [app.app, app.deletionTombstone] }
    }

    /// ARGV: owner token, lease ms.
    typealias Arguments = DeletionClaimArguments

    /// `{1, API key digest}` marked and claimed, `{2, API key digest}` a deletion was already under way, `{0}` no such
    /// app.
    enum Reply: ScriptReply, Equatable {
        case marked(apiKeyDigest: String)
        case underWay(apiKeyDigest: String)
        case noSuchApp

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "app_delete_mark.lua")
            switch try reader.integer() {
            case 0: self = .noSuchApp
            case 1: self = .marked(apiKeyDigest: try reader.string())
            case 2: self = .underWay(apiKeyDigest: try reader.string())
            case let other: throw StatusReplyError(script: reader.script, problem: "unknown outcome \(other)")
            }
            try reader.end()
        }
    }
}

/// ARGV of the scripts that take a deletion's claim: the owner token of the run, and the lease in ms.
struct DeletionClaimArguments: ScriptInput {
    var owner: String
    var leaseMs: Int64

    var strings: [String] { [owner, String(leaseMs)] }
}

/// KEYS of the scripts that work on a deletion's tombstone alone.
struct DeletionTombstoneKeys: ScriptInput {
    var app: RedisKeys
    var strings: [String] { [app.deletionTombstone] }
}
