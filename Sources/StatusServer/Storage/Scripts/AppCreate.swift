import RedisClient

/// The twin of `Scripts/app_create.lua` (SPEC §7 admin `POST /v1/apps`): creates the app record once.
enum AppCreate: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.appCreate }

    /// KEYS: app record, deletion tombstone.
    struct Keys: ScriptInput {
        var app: RedisKeys
        var strings: [String] { [app.app, app.deletionTombstone] }
    }

    /// ARGV: config JSON, API key digest, token secret, created-at ms.
    struct Arguments: ScriptInput {
        var config: String
        var apiKeyDigest: String
        var tokenSecret: String
        var createdAt: String

        var strings: [String] { [config, apiKeyDigest, tokenSecret, createdAt] }
    }

    /// `1` created, `0` exists, `-1` being deleted.
    enum Reply: Int64, ScriptOutcome {
        case created = 1
        case exists = 0
        case beingDeleted = -1

        static let script = "app_create.lua"
    }
}
