/// The subscriptions of one sharded pub/sub connection (one master), as a pure value: which channels it should hold,
/// which Redis confirmed, and the commands still awaiting their replies. The connection feeds it what happened (asked to
/// add or drop channels, connected, lost, a push or an error arrived) and carries out what it returns.
///
/// Replies to `SSUBSCRIBE` and `SUNSUBSCRIBE` come in the order the commands were sent, one push per channel, or one
/// error for the whole command; so the oldest command in flight owns the next confirmation or error. A `sunsubscribe`
/// push that no command of ours asked for is Redis telling that the channel's slot moved to another master.
struct ShardLinkState: Sendable {
    /// A command to write, channels of one slot each (a cluster refuses a command spanning slots).
    struct Command: Equatable, Sendable {
        var subscribe: Bool
        var channels: [String]

        /// The command's arguments.
        var arguments: [String] { [self.subscribe ? "SSUBSCRIBE" : "SUNSUBSCRIBE"] + self.channels }
    }

    /// What the connection must do after an input.
    enum Action: Equatable, Sendable {
        /// Deliver a message.
        case message(channel: String, payload: [UInt8])
        /// Redis confirmed these channels: callers waiting for them may go on.
        case confirmed([String])
        /// These channels are no longer served here (their slot moved, or Redis refused them): route them again.
        case moved([String])
        /// Every channel is subscribed again after the connection was lost, or after channels were moved here: what
        /// was published meanwhile is lost, and the consumer must resynchronise.
        case resubscribed
        /// The answer to a ping arrived.
        case pong
    }

    private enum InFlight: Sendable {
        case subscribe(channels: [String], remaining: Int)
        case unsubscribe(channels: [String], remaining: Int)
    }

    /// The channels this connection should hold.
    private(set) var wanted: Set<String> = []
    /// The channels Redis confirmed on the current connection.
    private(set) var confirmed: Set<String> = []
    private var inFlight: [InFlight] = []
    private var isConnected = false
    /// A gap must be reported once everything wanted is confirmed (after a reconnect, or channels moved here).
    private var gapPending = false
    /// The connection had connected before: the next connect is a reconnect.
    private var hasConnected = false

    /// Whether the connection is up.
    var connected: Bool { self.isConnected }

    /// Adds channels; returns the commands to write now (none while disconnected: ``connectionEstablished()`` sends
    /// them). `afterMove` marks channels that came from another master: a gap is reported once they are confirmed.
    mutating func add(_ channels: [String], afterMove: Bool = false) -> [Command] {
        let new = channels.filter { self.wanted.insert($0).inserted }
        if afterMove && !new.isEmpty {
            self.gapPending = true
        }
        guard self.isConnected, !new.isEmpty else { return [] }
        let commands = Self.commands(subscribe: true, new)
        for command in commands {
            self.inFlight.append(.subscribe(channels: command.channels, remaining: command.channels.count))
        }
        return commands
    }

    /// Drops channels; returns the commands to write now.
    mutating func remove(_ channels: [String]) -> [Command] {
        let dropped = channels.filter { self.wanted.remove($0) != nil }
        for channel in dropped {
            self.confirmed.remove(channel)
        }
        guard self.isConnected, !dropped.isEmpty else { return [] }
        let commands = Self.commands(subscribe: false, dropped)
        for command in commands {
            self.inFlight.append(.unsubscribe(channels: command.channels, remaining: command.channels.count))
        }
        return commands
    }

    /// The connection is up: subscribe to everything wanted.
    mutating func connectionEstablished() -> [Command] {
        self.isConnected = true
        self.confirmed = []
        self.inFlight = []
        if self.hasConnected {
            self.gapPending = true
        }
        self.hasConnected = true
        let commands = Self.commands(subscribe: true, Array(self.wanted))
        for command in commands {
            self.inFlight.append(.subscribe(channels: command.channels, remaining: command.channels.count))
        }
        return commands
    }

    /// The connection is gone: nothing is confirmed any more; the wanted channels stay, for the next connection.
    mutating func connectionLost() {
        self.isConnected = false
        self.confirmed = []
        self.inFlight = []
    }

    /// Takes every wanted channel away (their master is gone or no longer serves them), to be routed again.
    mutating func takeAll() -> [String] {
        let all = Array(self.wanted)
        self.wanted = []
        self.confirmed = []
        return all
    }

    /// A reply or push from Redis.
    mutating func receive(_ value: RedisValue) -> [Action] {
        if case .error = value {
            guard !self.inFlight.isEmpty else { return [] }
            // The oldest command was refused as a whole (MOVED, CROSSSLOT...): its channels go elsewhere.
            if case .subscribe(let channels, _) = self.inFlight.removeFirst() {
                let refused = channels.filter { self.wanted.remove($0) != nil }
                return refused.isEmpty ? [] : [.moved(refused)]
            }
            return []
        }
        if case .simpleString(let text) = value, text.uppercased() == "PONG" {
            // A connection that holds no channel any more is out of subscribed mode: PING answers plainly.
            return [.pong]
        }
        guard let items = value.array, items.count >= 2, let kind = items[0].string else { return [] }
        switch kind.lowercased() {
        case "smessage" where items.count >= 3, "message" where items.count >= 3:
            return [.message(channel: items[1].string ?? "", payload: items[2].bytes ?? [])]
        case "pong":
            return [.pong]
        case "ssubscribe":
            guard let channel = items[1].string else { return [] }
            self.countReply(subscribe: true)
            guard self.wanted.contains(channel) else { return [] }
            self.confirmed.insert(channel)
            var actions: [Action] = [.confirmed([channel])]
            if self.gapPending, self.confirmed.count == self.wanted.count {
                self.gapPending = false
                actions.append(.resubscribed)
            }
            return actions
        case "sunsubscribe":
            guard let channel = items[1].string else { return [] }
            if case .unsubscribe(let channels, _) = self.inFlight.first, channels.contains(channel) {
                self.countReply(subscribe: false)
                return []
            }
            // Not asked for: the slot of this channel left this master.
            self.confirmed.remove(channel)
            return self.wanted.remove(channel) == nil ? [] : [.moved([channel])]
        default:
            return []
        }
    }

    private mutating func countReply(subscribe: Bool) {
        guard let first = self.inFlight.first else { return }
        switch first {
        case .subscribe(let channels, let remaining) where subscribe:
            self.inFlight[0] = .subscribe(channels: channels, remaining: remaining - 1)
            if remaining <= 1 { self.inFlight.removeFirst() }
        case .unsubscribe(let channels, let remaining) where !subscribe:
            self.inFlight[0] = .unsubscribe(channels: channels, remaining: remaining - 1)
            if remaining <= 1 { self.inFlight.removeFirst() }
        default:
            break
        }
    }

    /// One command per slot, at most 512 channels each.
    static func commands(subscribe: Bool, _ channels: [String]) -> [Command] {
        var bySlot: [Int: [String]] = [:]
        for channel in channels {
            bySlot[RedisKeySlot.of(channel), default: []].append(channel)
        }
        return bySlot.keys.sorted().flatMap { slot in
            stride(from: 0, to: bySlot[slot]!.count, by: 512).map { start in
                Command(subscribe: subscribe, channels: Array(bySlot[slot]![start..<min(start + 512, bySlot[slot]!.count)]))
            }
        }
    }
}
