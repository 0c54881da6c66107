import RedisClient

/// The twin of `Scripts/status_read_copy.lua` (SPEC §4 getUserStatus): writes the read copy of a status hash that has
/// none yet, then answers the same `HMGET` a status read makes.
enum StatusReadCopy: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.statusReadCopy }

    typealias Keys = UserStatusKeys

    /// ARGV: the fields to return, ``StatusRepository/readFields``.
    struct Arguments: ScriptInput {
        var strings: [String] { StatusRepository.readFields }
    }

    /// The values of `HMGET status readFields...`, read as a status read is (``StatusRepository/decode(userId:fields:viewerIsFriend:)``),
    /// or nil when the user does not exist.
    struct Reply: ScriptReply {
        /// Nil when the user does not exist.
        var fields: RedisValue?

        init(_ value: RedisValue) throws {
            if value.isNull {
                fields = nil
                return
            }
            guard let values = value.array, values.count == StatusRepository.readFields.count else {
                throw StatusReplyError(
                    script: "status_read_copy.lua",
                    problem: "expected nil or \(StatusRepository.readFields.count) values, got \(value.kind)"
                )
            }
            fields = value
        }
    }
}
