/// The local recipients of one status change, split by what they may see of it: `seeing` get the status as it is,
/// `masked` without `lastActiveAt` (SPEC §2 last-seen privacy). The change is encoded at most twice, once per group,
/// never once per recipient.
struct Audience {
    var seeing: [DeviceSession] = []
    var masked: [DeviceSession] = []

    var isEmpty: Bool { seeing.isEmpty && masked.isEmpty }
    var count: Int { seeing.count + masked.count }
    /// Every recipient, whatever it may see.
    var sessions: [DeviceSession] { seeing + masked }
}
