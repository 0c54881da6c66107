import RedisClient

/// The bus's channels (`docs/bus.md`): where each message is published and who listens.
///
/// - **User channel** `st:{<appId>:<userId>}:bus`, sharded pub/sub (`SPUBLISH`/`SSUBSCRIBE`): everything about one
///   user (status changes, relationship changes, devices to close, the user's deletion). It carries the user's hash
///   tag, so it lives in the slot of the user's keys and the script that changes the user can publish on it. A node
///   subscribes to the user channel of every user its devices may hear about or belong to, reference-counted by its
///   fan-out index: it receives only what concerns its own devices.
/// - **App slot channel** `st:{<slot tag>}:app:<appId>`, sharded: every status change of the app's users whose keys
///   live in that hash slot, published by the same script. A node subscribes to all 16,384 of an app only while it
///   holds a session with presence scope `all` or `roles:`.
/// - **Control channel** `st:bus`, classic pub/sub (`PUBLISH`): app-wide news, rare (config changed, app deleted).
///   Every node subscribes to it.
enum BusChannels {
    /// The classic channel of app-wide control messages.
    static let control = "st:bus"

    /// The channel of everything about one user.
    static func user(_ appId: String, _ userId: String) -> String {
        "st:{\(appId):\(userId)}:bus"
    }

    /// The app's channel for the users whose keys are in hash slot `slot`.
    static func appSlot(_ appId: String, slot: Int) -> String {
        "st:{\(RedisKeySlot.tag(forSlot: slot))}:app:\(appId)"
    }

    /// The app slot channel a change of this user goes to.
    static func appSlot(_ appId: String, ofUser userId: String) -> String {
        appSlot(appId, slot: RedisKeySlot.of("{\(appId):\(userId)}"))
    }

    /// Every app slot channel of an app.
    static func allAppSlots(_ appId: String) -> [String] {
        (0..<RedisKeySlot.count).map { appSlot(appId, slot: $0) }
    }

    /// What a channel name of this layout names: a user channel's user, or an app slot channel's app; `nil` for any other
    /// name. Unambiguous because ids never contain `:`, `{` or `}` (SPEC §1).
    static func parse(_ channel: String) -> Parsed? {
        guard channel.hasPrefix("st:{"), let close = channel.firstIndex(of: "}") else { return nil }
        let tag = channel[channel.index(channel.startIndex, offsetBy: 4)..<close]
        let rest = channel[close...]
        if rest == "}:bus", let colon = tag.firstIndex(of: ":") {
            return .user(AppUser(appId: String(tag[..<colon]), userId: String(tag[tag.index(after: colon)...])))
        }
        if rest.hasPrefix("}:app:") {
            return .app(String(rest.dropFirst("}:app:".count)))
        }
        return nil
    }

    /// What ``parse(_:)`` finds in a channel name.
    enum Parsed: Equatable {
        case user(AppUser)
        case app(String)
    }

    /// The two channels a status script publishes a change of this user on, in its ARGV order.
    static func statusArguments(_ appId: String, _ userId: String) -> [String] {
        [user(appId, userId), appSlot(appId, ofUser: userId)]
    }
}
