import RedisClient

/// The twin of `Scripts/app_delete_claim.lua` (SPEC §7 admin `DELETE /v1/apps/{appId}`): a run of the deletion takes or
/// renews the claim on the tombstone before each step.
enum AppDeleteClaim: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.appDeleteClaim }

    /// KEYS: deletion tombstone.
    typealias Keys = DeletionTombstoneKeys

    /// ARGV: owner token of this run, lease ms.
    typealias Arguments = DeletionClaimArguments

    /// `{1, API key digest, ms since the tombstone was set}` claimed, `{0}` claimed by another live run, `{-1}` no
    /// tombstone.
    enum Reply: ScriptReply, Equatable {
        case claimed(apiKeyDigest: String, ageMs: Int64)
        case busy
        case gone

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "app_delete_claim.lua")
            switch try reader.integer() {
            case 1: self = .claimed(apiKeyDigest: try reader.string(), ageMs: try reader.integer())
            case 0: self = .busy
            case -1: self = .gone
            case let other: throw StatusReplyError(script: reader.script, problem: "unknown outcome \(other)")
            }
            try reader.end()
        }
    }
}
