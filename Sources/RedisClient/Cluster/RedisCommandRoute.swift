/// Where a command must go on a Redis Cluster: the slot of its keys, or any node for a command without keys.
///
/// The key positions follow the Redis command table for the commands statusd and its tests send; any other command
/// is taken to have its first key as its first argument. Multi-key commands and scripts must keep to one slot, as on a
/// cluster Redis refuses them otherwise: a debug build stops at a command that does not (``assertOneSlot``), on a
/// single server as well, so the mistake shows before it reaches a cluster.
enum RedisCommandRoute: Equatable, Sendable {
    /// The command's keys (or shard channel) hash to this slot.
    case slot(Int)
    /// The command names no key (`PING`, `INFO`, `SCRIPT LOAD`, `PUBLISH`, an `EVALSHA` with no keys...).
    case anyNode

    /// The route of `command` (its name in any case).
    init(_ command: [String]) {
        guard let key = Self.keys(of: command).first else {
            self = .anyNode
            return
        }
        self = .slot(RedisKeySlot.of(key))
    }

    /// Stops a debug build when the keys of `command` span several slots.
    static func assertOneSlot(_ command: [String]) {
        assert(
            {
                let slots = Set(keys(of: command).map(RedisKeySlot.of))
                return slots.count <= 1
            }(),
            "a Redis command touches keys of several hash slots: \(command.prefix(8))"
        )
    }

    /// The keys (or, for `SPUBLISH`/`SSUBSCRIBE`, the shard channels) a command names.
    static func keys(of command: [String]) -> ArraySlice<String> {
        guard let name = command.first else { return [] }
        switch name.uppercased() {
        case "PUBSUB":
            // PUBSUB SHARDNUMSUB names shard channels, which live on their slot's master; the other subcommands none.
            return command.count >= 3 && command[1].uppercased() == "SHARDNUMSUB" ? command.dropFirst(2) : []
        case "PING", "INFO", "SCRIPT", "TIME", "CLUSTER", "PUBLISH", "SUBSCRIBE", "SCAN", "DBSIZE", "FLUSHALL", "FLUSHDB",
            "CLIENT", "CONFIG", "MEMORY", "ASKING", "AUTH", "SELECT", "ECHO", "READONLY", "COMMAND", "DEBUG", "MULTI",
            "EXEC", "WAIT", "KEYS", "RANDOMKEY", "SLOWLOG", "LASTSAVE", "SAVE", "BGSAVE", "HELLO":
            return []
        case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
            guard command.count >= 3, let count = Int(command[2]), count >= 0, command.count >= 3 + count else { return [] }
            return command[3..<(3 + count)]
        case "DEL", "UNLINK", "EXISTS", "MGET", "SUNION", "SINTER", "SDIFF", "TOUCH", "WATCH", "SSUBSCRIBE", "SUNSUBSCRIBE":
            return command.dropFirst()
        case "RENAME", "RENAMENX", "SMOVE", "RPOPLPUSH", "LMOVE", "COPY":
            return command.dropFirst().prefix(2)
        case "MSET", "MSETNX":
            return ArraySlice(stride(from: 1, to: command.count, by: 2).map { command[$0] })
        case "XREAD", "XREADGROUP":
            guard let streams = command.firstIndex(where: { $0.uppercased() == "STREAMS" }) else { return [] }
            let rest = command[(streams + 1)...]
            return rest.prefix(rest.count / 2)
        case "XGROUP", "XINFO", "OBJECT":
            return command.count >= 3 ? command[2...2] : []
        default:
            return command.count >= 2 ? command[1...1] : []
        }
    }
}
