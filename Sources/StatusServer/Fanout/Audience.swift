import NIOCore

/// The local recipients of one status change, split by the view they get of it (SPEC §10.5): `own` (the user's own
/// devices) the own view, `seeing` the public view, `masked` the public view without `lastActiveAt` (SPEC §2 last-seen
/// privacy). The change is encoded at most three times, once per group, never once per recipient.
struct Audience {
    var own = Recipients()
    var seeing = Recipients()
    var masked = Recipients()

    var isEmpty: Bool { own.isEmpty && seeing.isEmpty && masked.isEmpty }
    var count: Int { own.count + seeing.count + masked.count }
    /// Every recipient, whatever it may see.
    var sessions: [DeviceSession] { Array(own) + Array(seeing) + Array(masked) }
}

/// Sessions grouped by the event loop of their channels, as a delivery hands them out: each loop takes its share in
/// one task (``DeliveryBatch``), so a batch touches no session one by one before the loop that owns it does.
struct Recipients: Sequence {
    /// One share per event loop, in the order the loops first appeared.
    private(set) var shares: [(loop: any EventLoop, sessions: [DeviceSession])] = []
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Adds a session to its loop's share (a node has as many loops as cores: the search is over a handful).
    mutating func append(_ session: DeviceSession) {
        let loop = session.eventLoop
        if let position = shares.firstIndex(where: { $0.loop === loop }) {
            shares[position].sessions.append(session)
        } else {
            shares.append((loop, [session]))
        }
        count += 1
    }

    /// Keeps the sessions for which `keep` holds.
    mutating func keep(where keep: (DeviceSession) -> Bool) {
        var kept = Recipients()
        for session in self where keep(session) { kept.append(session) }
        self = kept
    }

    func makeIterator() -> FlattenSequence<[[DeviceSession]]>.Iterator {
        shares.map(\.sessions).joined().makeIterator()
    }
}
