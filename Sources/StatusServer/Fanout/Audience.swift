/// The local recipients of one status change, split by the view they get of it (SPEC §10.5): `own` (the user's own
/// devices) the own view, `seeing` the public view, `masked` the public view without `lastActiveAt` (SPEC §2 last-seen
/// privacy). The change is encoded at most three times, once per group, never once per recipient.
struct Audience {
    var own: [DeviceSession] = []
    var seeing: [DeviceSession] = []
    var masked: [DeviceSession] = []

    var isEmpty: Bool { own.isEmpty && seeing.isEmpty && masked.isEmpty }
    var count: Int { own.count + seeing.count + masked.count }
    /// Every recipient, whatever it may see.
    var sessions: [DeviceSession] { own + seeing + masked }
}
