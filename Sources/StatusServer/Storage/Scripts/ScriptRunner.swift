import RedisClient
import StatusCore

/// The one way statusd runs its Lua scripts: `EVALSHA` through the client (which loads a script Redis lost on
/// `NOSCRIPT`), a script's error reply mapped to the ``StatusError`` it stands for (``ScriptErrorReply``), and the
/// reply decoded by the script's twin. Pipelines keep their single round trip: a script's `EVALSHA` shares the flush
/// with the commands that ride along, and only its own reply is decoded here. Every call's first argument is its
/// deadline on the clock of the Redis server its keys are on (``WriteFence``), which `lib.lua` takes off before the
/// script reads its own.
struct ScriptRunner: Sendable {
    let redis: RedisClient
    let scripts: ScriptLibrary

    /// Runs `script` alone. `acrossSlots`: its keys are of several hash slots, which a single server only runs
    /// (``RedisClient/evalScript(_:keys:arguments:acrossSlots:)``).
    func run<Script: StatusScript>(
        _ script: Script.Type,
        keys: Script.Keys,
        arguments: Script.Arguments,
        acrossSlots: Bool = false
    ) async throws -> Script.Reply {
        let value: RedisValue
        let keys = try keys.strings
        do {
            value = try await redis.evalScript(
                Script.script(in: scripts),
                keys: keys,
                arguments: try fenced(arguments, first: keys.first),
                acrossSlots: acrossSlots
            )
        } catch let error as RedisClientError where error.kind == .server {
            throw ScriptErrorReply.statusError(error.message) ?? error
        }
        return try Self.decode(script, value)
    }

    /// Runs `script` with `commands` after it in one round trip (the commands must be safe to send again: on
    /// `NOSCRIPT` the whole pipeline is). Returns the script's reply and the commands' replies, in order.
    func run<Script: StatusScript>(
        _ script: Script.Type,
        keys: Script.Keys,
        arguments: Script.Arguments,
        then commands: [[String]]
    ) async throws -> (Script.Reply, ArraySlice<RedisValue>) {
        let keys = try keys.strings
        let replies = try await redis.pipeline(
            script: Script.script(in: scripts),
            keys: keys,
            arguments: try fenced(arguments, first: keys.first),
            then: commands
        )
        guard let first = replies.first else {
            throw StatusReplyError(script: "\(script)", problem: "no reply in the pipeline")
        }
        return (try Self.decode(script, first), replies.dropFirst())
    }

    /// The `EVALSHA` of `script`, to send in a pipeline with ``pipeline(_:loading:)``.
    func command<Script: StatusScript>(_ script: Script.Type, keys: Script.Keys, arguments: Script.Arguments) throws -> [String] {
        let keys = try keys.strings
        return RedisClient.evalsha(Script.script(in: scripts), keys: keys, arguments: try fenced(arguments, first: keys.first))
    }

    /// A call's arguments after its deadline, on the clock of the server its keys are on (``WriteFence``).
    private func fenced(_ arguments: some ScriptInput, first key: String?) throws -> [String] {
        let strings = try arguments.strings
        var fenced: [String] = []
        fenced.reserveCapacity(1 + strings.count)
        fenced.append(String(scripts.fence.deadlineMs(at: redis.currentEndpoint(forKey: key))))
        fenced.append(contentsOf: strings)
        return fenced
    }

    /// Sends `commands`, some of them ``command(_:keys:arguments:)``s of `loading`, in one round trip; when Redis lost
    /// a script the scripts are loaded and the whole pipeline sent again, so every command must be safe to repeat.
    /// Decode each script's reply with ``decode(_:_:)``.
    func pipeline(_ commands: [[String]], loading loaded: [any StatusScript.Type]) async throws -> [RedisValue] {
        try await redis.pipelineLoadingScripts(commands, scripts: loaded.map { $0.script(in: scripts) })
    }

    /// A script's reply from a pipeline: an error reply becomes its ``StatusError`` (or a `.server` client error),
    /// anything else is decoded by the twin.
    static func decode<Script: StatusScript>(_ script: Script.Type, _ value: RedisValue) throws -> Script.Reply {
        if case .error(let message) = value {
            throw ScriptErrorReply.statusError(message) ?? RedisClientError(kind: .server, message: message)
        }
        do {
            return try Script.Reply(value)
        } catch let error as StatusReplyError where error.script.isEmpty {
            // The shared shapes (``FlagReply``, ``IntegerReply``) do not know whose reply they read.
            throw StatusReplyError(script: "\(script)", problem: error.problem)
        }
    }
}
