import RedisClient
import StatusCore

/// The twin of `Scripts/connect_admission.lua` (SPEC §10.6 `connectRateLimit`, §10.7 refusal cost): whether a connect
/// would be admitted now, read before a WebSocket connect subscribes or stores anything.
enum ConnectAdmission: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.connectAdmission }

    /// KEYS: connect rate-limit log.
    struct Keys: ScriptInput {
        var user: UserKeys
        var strings: [String] { [user.connectRateLimit] }
    }

    /// ARGV: calls, window ms.
    struct Arguments: ScriptInput {
        var limit: AppConfig.RateLimit

        var strings: [String] { [String(limit.calls), String(Int64(limit.windowSeconds) * 1000)] }
    }

    /// `0`; a refusal is the error reply `CONNECT_RATE_LIMITED <ms>` (``ScriptErrorReply``).
    typealias Reply = IgnoredReply
}
