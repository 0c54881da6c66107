import RedisClient

/// The Swift twin of one Lua script of `Scripts/`: what its header comment says, as types. ``ScriptRunner`` sends
/// `Keys` and `Arguments` as the script's KEYS and ARGV and hands the reply to `Reply`, so the contract is written once
/// beside the script and checked by the compiler and by unit tests, not by each caller.
protocol StatusScript {
    /// The script's KEYS, in order.
    associatedtype Keys: ScriptInput
    /// The script's ARGV, in order.
    associatedtype Arguments: ScriptInput
    /// The script's reply, decoded.
    associatedtype Reply: ScriptReply

    /// The loaded script (its source and SHA1) in `library`.
    static func script(in library: ScriptLibrary) -> RedisScript
}

/// A script's KEYS or ARGV.
protocol ScriptInput {
    /// The strings sent, in the order the script reads them.
    var strings: [String] { get throws }
}

/// A script's reply, decoded from the value Redis answered. A value of another shape is thrown as a
/// ``StatusReplyError`` naming the script and what was wrong; an error reply never reaches it (``ScriptRunner``
/// maps those).
protocol ScriptReply {
    init(_ value: RedisValue) throws
}

/// The KEYS of a script that reads or writes no key besides the user's status hash, profile and devices.
struct UserStatusKeys: ScriptInput {
    var user: UserKeys
    var strings: [String] { [user.status, user.profile, user.devices] }
}

/// The KEYS of a script that also starts or stops the retention clock of the user's subscriptions.
struct UserPresenceKeys: ScriptInput {
    var user: UserKeys
    var strings: [String] { [user.status, user.profile, user.devices, user.subscriptions] }
}

/// A script reply that is a single integer, such as `1 written, 0 changed meanwhile, -1 no such app`.
struct IntegerReply: ScriptReply, Equatable {
    var value: Int64

    init(_ value: RedisValue) throws {
        self.value = try ScriptReplyReader.integer(value, script: "")
    }
}

/// A script reply that carries nothing (such as `Reply: 1` or `Reply: 0`); any non-error value is accepted.
struct IgnoredReply: ScriptReply {
    init(_ value: RedisValue) throws {}
}

/// A script reply that is `1` (yes) or `0` (no).
struct FlagReply: ScriptReply, Equatable {
    var value: Bool

    init(_ value: RedisValue) throws {
        switch try ScriptReplyReader.integer(value, script: "") {
        case 0: self.value = false
        case 1: self.value = true
        case let other: throw StatusReplyError(script: "", problem: "expected 0 or 1, got \(other)")
        }
    }
}

/// A script reply that is one integer naming one of a few outcomes (such as `1 created, 0 exists, -1 being deleted`):
/// an enum of them, each with its integer as raw value.
protocol ScriptOutcome: ScriptReply, RawRepresentable<Int64> {
    /// The script's file, for errors.
    static var script: String { get }
}

extension ScriptOutcome {
    init(_ value: RedisValue) throws {
        let raw = try ScriptReplyReader.integer(value, script: Self.script)
        guard let outcome = Self(rawValue: raw) else {
            throw StatusReplyError(script: Self.script, problem: "unknown outcome \(raw)")
        }
        self = outcome
    }
}
