import RedisClient

/// The twin of `Scripts/app_config_update.lua` (SPEC §3): a config PATCH written only over the config it was validated
/// against (compare and set).
enum AppConfigUpdate: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.appConfigUpdate }

    /// KEYS: app record.
    struct Keys: ScriptInput {
        var app: RedisKeys
        var strings: [String] { [app.app] }
    }

    /// ARGV: expected config JSON, new config JSON.
    struct Arguments: ScriptInput {
        var expected: String
        var new: String

        var strings: [String] { [expected, new] }
    }

    /// `1` written, `0` changed meanwhile, `-1` no such app.
    enum Reply: Int64, ScriptOutcome {
        case written = 1
        case changedMeanwhile = 0
        case noSuchApp = -1

        static let script = "app_config_update.lua"
    }
}
