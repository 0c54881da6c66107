/// What one device has seen of the users it watches (its user's subscriptions), across its reconnects: the newest
/// `version` and `statusType` per watched user, when it was shown a user `offline` while measuring, and the `resume`
/// token of its last welcome. Only the device's event loop touches it (a device stays on its loop when it reconnects).
final class DeviceWatch: @unchecked Sendable {
    /// The watched users, ascending.
    let targets: [Int32]
    /// The newest version seen per target (-1: none yet).
    private(set) var versions: [Int64]
    private var types: [DeviceFrame.StatusKind]
    /// Monotonic µs at which the device was shown the target `offline` while measuring (0: not shown offline).
    private var offlineSince: [UInt64]
    /// The token of the last welcome, presented on a reconnect.
    var resume: String?

    init(targets: [Int32]) {
        self.targets = targets.sorted()
        versions = Array(repeating: -1, count: targets.count)
        types = Array(repeating: .unknown, count: targets.count)
        offlineSince = Array(repeating: 0, count: targets.count)
    }

    /// What seeing `status` meant to this watcher.
    enum Seen {
        /// Not a watched user, or a version no newer than one already seen.
        case notNew
        /// A newer version.
        case new
        /// A newer version showing the user `online` again after the watcher was shown them `offline` while measuring:
        /// an offline→online pair, the µs it was shown offline.
        case flap(offlineMicros: UInt64)
    }

    /// Records a status object received at `nowMicros`; `measuring` says whether an `offline` counts towards a flap.
    func observe(_ status: DeviceFrame.Status, nowMicros: UInt64, measuring: Bool) -> Seen {
        guard let index = index(of: status.user), status.version > versions[index] else { return .notNew }
        versions[index] = status.version
        types[index] = status.type
        switch status.type {
        case .offline:
            if measuring && offlineSince[index] == 0 { offlineSince[index] = max(nowMicros, 1) }
            return .new
        case .online:
            let since = offlineSince[index]
            offlineSince[index] = 0
            return since == 0 ? .new : .flap(offlineMicros: nowMicros &- since)
        case .unlogined, .unknown:
            offlineSince[index] = 0
            return .new
        }
    }

    /// Watched users whose last status shown was `offline`.
    var shownOffline: Int { types.reduce(0) { $0 + ($1 == .offline ? 1 : 0) } }

    private func index(of user: Int) -> Int? {
        guard user >= 0 else { return nil }
        var low = 0
        var high = targets.count
        let key = Int32(truncatingIfNeeded: user)
        while low < high {
            let middle = (low + high) / 2
            if targets[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low < targets.count && targets[low] == key ? low : nil
    }
}
