import StatusCore

/// The error replies of the scripts that stand for a SPEC error, and the rate-limited reply `{1, retry after ms}`.
/// ``ScriptRunner`` maps every script's error reply here, so a script's refusal means the same whichever call ran it.
enum ScriptErrorReply {
    /// The SPEC error of `message`, nil for an error no script raises on purpose (it stays a Redis error).
    static func statusError(_ message: String) -> StatusError? {
        if message.hasPrefix("STATUSD_LATE") {
            return StatusError(.unavailable, "redis received the call after its deadline; nothing was changed")
        }
        if message.contains("USER_NOT_FOUND") { return StatusError(.userNotFound, "user not found") }
        if message.contains("TOKEN_REVOKED") { return StatusError(.unauthorized, "the token's user no longer exists") }
        if let range = message.range(of: "CONNECT_RATE_LIMITED ") {
            let retry = Int64(message[range.upperBound...].prefix { $0.isNumber }) ?? 1000
            return StatusError(.rateLimited, "too many connects, retry in \(retry) ms", retryAfterMs: retry)
        }
        return nil
    }

    /// SPEC §5: a call the sliding window refused (`lib.lua` `admit`), retried after `retryAfterMs`.
    static func rateLimited(retryAfterMs: Int64) -> StatusError {
        StatusError(.rateLimited, "too many calls, retry in \(retryAfterMs) ms", retryAfterMs: retryAfterMs)
    }
}
