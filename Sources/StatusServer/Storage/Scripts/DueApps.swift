import RedisClient

/// KEYS of the scripts on the apps with a due-time index: the apps, scored by their earliest entry, and their
/// generations (``RedisKeys/DueApps``).
struct DueAppsKeys: ScriptInput {
    var apps: String
    var generations: String
    var strings: [String] { [apps, generations] }

    init(_ apps: RedisKeys.DueApps) {
        self.apps = apps.scores
        self.generations = apps.generations
    }
}

/// The twin of `Scripts/due_app_mark.lua` (SPEC §10.2, §10.3, §10.7): an entry written into an app's due-time index
/// makes the app's score no later than it and moves the app's generation.
enum DueAppMark: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.dueAppMark }

    typealias Keys = DueAppsKeys

    /// ARGV: appId, when the entry falls due.
    struct Arguments: ScriptInput {
        var appId: String
        var dueAt: Int64
        var strings: [String] { [appId, String(dueAt)] }
    }

    /// The app's generation.
    typealias Reply = IntegerReply
}

/// The twin of `Scripts/due_apps_take.lua` (SPEC §10.2, §10.3, §10.7): the apps whose earliest entry fell due, claimed
/// by the calling node for a while, each with its generation.
enum DueAppsTake: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.dueAppsTake }

    typealias Keys = DueAppsKeys

    /// ARGV: now (epoch ms), claim ms, most apps to take.
    struct Arguments: ScriptInput {
        var nowMs: Int64
        var claimMs: Int64
        var limit: Int
        var strings: [String] { [String(nowMs), String(claimMs), String(limit)] }
    }

    /// `{appId, generation, ...}`.
    struct Reply: ScriptReply {
        var apps: [(appId: String, generation: String)]

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "due_apps_take.lua")
            guard reader.values.count % 2 == 0 else {
                throw StatusReplyError(script: reader.script, problem: "\(reader.values.count) values, not pairs")
            }
            apps = []
            while !reader.isAtEnd { apps.append((try reader.string(), try reader.string())) }
        }
    }
}

/// The twin of `Scripts/due_app_settle.lua` (SPEC §10.2, §10.3, §10.7): after a sweep, the app's score becomes its
/// earliest remaining entry, or the app leaves the set, unless a writer marked it since the sweep took it.
enum DueAppSettle: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.dueAppSettle }

    typealias Keys = DueAppsKeys

    /// ARGV: appId, the generation it was taken with, its earliest remaining entry ('' = none).
    struct Arguments: ScriptInput {
        var appId: String
        var generation: String
        var next: Int64?
        var strings: [String] { [appId, generation, next.map { String($0) } ?? ""] }
    }

    /// 1 settled, 0 left as a writer left it.
    typealias Reply = IntegerReply
}
