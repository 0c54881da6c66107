import RedisClient

/// The twin of `Scripts/presence_index.lua` (SPEC §4 listing by presence, §7 resume): applies presence updates to the
/// app's online index in version order and logs them in its recent changes.
enum PresenceIndex: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.presenceIndex }

    /// KEYS: online index, applied versions, recent changes, listed roles.
    struct Keys: ScriptInput {
        var app: RedisKeys
        var strings: [String] { [app.online, app.onlineVersions, app.recentChanges, app.onlineRoles] }
    }

    /// ARGV: keep ms, the role indexes' prefix, then userId, version, online ('1'|'0'), role ('' = none) for each
    /// update.
    struct Arguments: ScriptInput {
        var keepMs: Int64
        var rolePrefix: String
        var updates: [OnlineIndexWriter.Update]

        var strings: [String] {
            var strings = [String(keepMs), rolePrefix]
            strings.reserveCapacity(2 + 4 * updates.count)
            for update in updates {
                strings += [update.userId, String(update.version), update.online ? "1" : "0", update.role ?? ""]
            }
            return strings
        }
    }

    /// How many updates were applied (the others were older than what the index holds).
    typealias Reply = IntegerReply
}
