import RedisClient
import StatusCore

/// The twin of `Scripts/query_rate_limit.lua` (SPEC §4 getUserStatus of others and subscribeUserStatus, §5 rate limit,
/// §10.5 block versions): counts the call or refuses it, and answers what the call needs of the caller's own keys.
enum QueryRateLimit: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.queryRateLimit }

    /// KEYS: rate-limit log, status, blocks (by me), blocked by, profile, friends, block versions.
    struct Keys: ScriptInput {
        var user: UserKeys
        var operation: RateLimitedOperation

        var strings: [String] {
            [user.rateLimit(operation), user.status, user.blocks, user.blockedBy, user.profile, user.friends, user.blockVersions]
        }
    }

    /// ARGV: calls, window ms, then the asked userIds.
    struct Arguments: ScriptInput {
        var rateLimit: RateLimitArguments
        var asked: [String]

        var strings: [String] { rateLimit.strings + asked }
    }

    /// `{0, calls left, n, blocked userId x n, their version at the block ('' unknown) x n, friend flag (1|0) per asked
    /// userId}` when accepted; `{1, retry after ms}` is thrown as `RATE_LIMITED`, and `USER_NOT_FOUND` is an error
    /// reply. The friend flags are all the values left: ``Admission/init(_:asked:)`` checks their number.
    struct Reply: ScriptReply {
        var admission: Admission

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "query_rate_limit.lua")
            try reader.admitted()
            admission = try Admission(reader.remaining, asked: nil)
        }
    }

    /// An accepted call: the calls left in the window, the count of blocked users, those users (either way of
    /// blocking), then one flag per asked user, 1 when they are the caller's friend.
    struct Admission: Equatable {
        var callsLeft: Int
        var blocked: Set<String>
        /// For blocked users, their public version when the block began (SPEC §10.5).
        var blockVersions: [String: Int64] = [:]
        var friends: [Bool]

        /// Reads the values after the leading `0`, refusing values whose counts do not add up (with `asked`, also
        /// the number of friend flags), rather than reading friendship flags shifted onto other users.
        init(_ reply: ArraySlice<RedisValue>, asked: Int?) throws {
            let base = reply.startIndex
            guard reply.count >= 2, let left = reply[base].int, let wide = reply[base + 1].int, wide >= 0,
                reply.count >= 2 + 2 * Int(wide), asked.map({ reply.count == 2 + 2 * Int(wide) + $0 }) ?? true
            else {
                throw StatusReplyError(script: "query_rate_limit.lua", problem: "the accepted reply's counts do not add up")
            }
            let count = Int(wide)
            callsLeft = Int(left)
            let ids = reply[(base + 2)..<(base + 2 + count)].map { $0.string ?? "" }
            blocked = Set(ids.filter { !$0.isEmpty })
            var versions: [String: Int64] = [:]
            for (id, version) in zip(ids, reply[(base + 2 + count)..<(base + 2 + 2 * count)]) {
                if let value = version.int ?? version.string.flatMap({ Int64($0) }) { versions[id] = value }
            }
            blockVersions = versions
            friends = reply[(base + 2 + 2 * count)...].map { $0 == .integer(1) }
        }

        init(_ reply: [RedisValue], asked: Int) throws {
            try self.init(reply[...], asked: Optional(asked))
        }

        init(callsLeft: Int, blocked: Set<String>, blockVersions: [String: Int64] = [:], friends: [Bool]) {
            self.callsLeft = callsLeft
            self.blocked = blocked
            self.blockVersions = blockVersions
            self.friends = friends
        }
    }
}

/// The head of a rate-limited script's ARGV (`lib.lua` `admit`, SPEC §5): the calls allowed in any window, and the
/// window in ms.
struct RateLimitArguments: Sendable {
    var calls: Int
    var windowMs: Int64

    init(_ limit: AppConfig.RateLimit) {
        calls = limit.calls
        windowMs = Int64(limit.windowSeconds) * 1000
    }

    var strings: [String] { [String(calls), String(windowMs)] }
}

extension ScriptReplyReader {
    /// Reads the head of a rate-limited script's reply: `0` accepted (the values follow), or `{1, retry after ms}`,
    /// thrown as `RATE_LIMITED` (retry 1000 ms when the reply does not say).
    mutating func admitted() throws {
        let position = index
        switch try integer() {
        case 0:
            return
        case 1:
            let retry = isAtEnd ? nil : try value().int
            throw ScriptErrorReply.rateLimited(retryAfterMs: retry ?? 1000)
        case let other:
            throw StatusReplyError(script: script, problem: "expected 0 or 1 at position \(position), got \(other)")
        }
    }
}
