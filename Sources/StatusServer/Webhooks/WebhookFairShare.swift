/// Who gets a node's free delivery slots (SPEC §10.7: one app's receiver never delays another app's deliveries): the
/// apps with queued events are served in turn, starting after the last one served, and no app holds more than
/// `perApp` slots, so an app whose receiver hangs keeps at most that many slots busy and everybody else finds theirs.
/// An app with nothing due now (every event in flight or waiting for a retry) is skipped until it may have some.
/// Pure: the dispatcher asks it what to take, then tells it what it took and what finished.
struct WebhookFairShare: Sendable {
    /// Slots of the node.
    let total: Int
    /// Slots one app may hold.
    let perApp: Int
    /// Deliveries in flight, per app.
    private(set) var inFlight: [String: Int] = [:]
    /// Deliveries in flight in all.
    private(set) var busy = 0
    /// Apps with nothing due, and until when they are left alone.
    private var resting: [String: ContinuousClock.Instant] = [:]
    /// Deliveries finished per app (with deliveries in flight or resting), to tell whether one finished during a take.
    private var finishes: [String: Int] = [:]
    /// The app served last; the next round starts after it.
    private var last: String?

    init(total: Int, perApp: Int) {
        self.total = total
        self.perApp = max(1, perApp)
    }

    /// Free slots of the node.
    var free: Int { max(0, total - busy) }

    /// How many events to take from which app now: the apps, in appId order, visited round-robin from after the app
    /// served last; each gets what it may still hold, while slots are free.
    func plan(apps unordered: [String], now: ContinuousClock.Instant) -> [(appId: String, count: Int)] {
        guard !unordered.isEmpty, free > 0 else { return [] }
        let apps = unordered.sorted()
        var start = 0
        if let last, let position = apps.firstIndex(where: { $0 > last }) {
            start = position
        }
        var left = free
        var grants: [(appId: String, count: Int)] = []
        for offset in 0..<apps.count where left > 0 {
            let appId = apps[(start + offset) % apps.count]
            if let until = resting[appId], now < until { continue }
            let room = min(perApp - (inFlight[appId] ?? 0), left)
            guard room > 0 else { continue }
            grants.append((appId, room))
            left -= room
        }
        return grants
    }

    /// `count` deliveries of `appId` started (a take may find fewer events than planned).
    mutating func started(_ appId: String, count: Int) {
        last = appId
        guard count > 0 else { return }
        inFlight[appId, default: 0] += count
        busy += count
    }

    /// One delivery of `appId` finished: its slot is free, and the app may have an event due again (a retry).
    mutating func finished(_ appId: String) {
        let remaining = (inFlight[appId] ?? 1) - 1
        inFlight[appId] = remaining > 0 ? remaining : nil
        busy = max(0, busy - 1)
        resting[appId] = nil
        finishes[appId, default: 0] += 1
    }

    /// What to pass to ``rest(_:until:mark:)`` for a take of `appId` that starts now.
    func mark(_ appId: String) -> Int {
        finishes[appId] ?? 0
    }

    /// A take that started at `mark` found nothing due for the app: leave it alone until `until`, unless one of its
    /// deliveries finished since (the take may have seen that event still leased; it may have a retry due now).
    mutating func rest(_ appId: String, until: ContinuousClock.Instant, mark: Int) {
        guard (finishes[appId] ?? 0) == mark else { return }
        resting[appId] = until
    }

    /// Forgets what is kept of apps no longer indexed and idle here, so the maps do not outgrow the index.
    mutating func prune(keeping apps: Set<String>) {
        resting = resting.filter { apps.contains($0.key) }
        finishes = finishes.filter { apps.contains($0.key) || inFlight[$0.key] != nil }
    }
}
