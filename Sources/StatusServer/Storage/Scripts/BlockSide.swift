import RedisClient

/// The twin of `Scripts/block_side.lua` (SPEC §4, §10.5): one side of a block, in that user's slot: their half of the
/// pair, the freeze of their public version for the other side, and the start (or end) of the mask on their channels.
enum BlockSide: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.blockSide }

    /// KEYS: status, blocks, blockedby (of the user whose side this is).
    struct Keys: ScriptInput {
        var user: UserKeys
        var strings: [String] { [user.status, user.blocks, user.blockedBy] }
    }

    /// Whether the block begins or is lifted.
    enum Mode: String, Sendable {
        case block
        case unblock
    }

    /// Which half of the pair the user holds: the block is theirs (`byMe`), or the other side's (`me`).
    enum Half: String, Sendable {
        case byMe
        case me
    }

    /// ARGV: mode, half, the other userId, appId, the user's userId, then the user's two channels.
    struct Arguments: ScriptInput {
        var mode: Mode
        var half: Half
        var other: String
        var appId: String
        var userId: String

        var strings: [String] {
            [mode.rawValue, half.rawValue, other, appId, userId] + BusChannels.statusArguments(appId, userId)
        }
    }

    /// The frozen public version (a block), or 1 when the mask ended and 0 when a block between the two is left.
    typealias Reply = IntegerReply
}
