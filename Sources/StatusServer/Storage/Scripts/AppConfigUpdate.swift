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
    enum Reply: Int64, ScriptReply {
        case written = 1
        case changedMeanwhile = 0
        case noSuchApp = -1

        init(_ value: RedisValue) throws {
            let raw = try ScriptReplyReader.integer(value, script: "app_config_update.lua")
            guard let reply = Self(rawValue: raw) else {
                throw StatusReplyError(script: "app_config_update.lua", problem: "unknown outcome \(raw)")
            }
            self = reply
        }
    }
}
