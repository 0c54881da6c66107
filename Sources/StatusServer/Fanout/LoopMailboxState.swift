/// The bookkeeping of a ``LoopMailbox`` as a pure value: posts in, what to schedule and what to deliver out. No loop and
/// no lock inside, so its rules are tested alone (`LoopMailboxStateTests`).
///
/// - The first post while no drain is scheduled schedules one; later posts join it.
/// - A drain takes items in the order they were posted, whole, until their deliveries reach the turn limit (at least
///   one item); when items are left the drain stays scheduled (it schedules the next itself), else the next post
///   schedules one.
/// - The deliveries waiting are counted: past the high water mark a post says so (its poster waits), and a take that
///   brings them under the low water mark says so (the waiting posters go on).
struct LoopMailboxState<Item> {
    let turnLimit: Int
    let highWater: Int
    let lowWater: Int

    private(set) var items: [(item: Item, deliveries: Int)] = []
    /// Deliveries across ``items``.
    private(set) var waiting = 0
    /// A drain is scheduled on the loop.
    private(set) var isScheduled = false

    init(turnLimit: Int, highWater: Int, lowWater: Int) {
        self.turnLimit = turnLimit
        self.highWater = highWater
        self.lowWater = lowWater
    }

    /// What a post asks of its poster.
    struct Posted: Equatable {
        /// Schedule a drain on the loop.
        var schedule: Bool
        /// Wait until the waiting deliveries are under the low water mark.
        var full: Bool
    }

    mutating func post(_ posted: [(item: Item, deliveries: Int)]) -> Posted {
        items.append(contentsOf: posted)
        waiting += posted.reduce(0) { $0 + $1.deliveries }
        let schedule = !isScheduled
        isScheduled = true
        return Posted(schedule: schedule, full: waiting > highWater)
    }

    /// What a drain takes.
    struct Taken {
        var items: [Item]
        /// Items are left: schedule the next drain.
        var more: Bool
        /// The waiting deliveries are under the low water mark: waiting posters go on.
        var belowLowWater: Bool
    }

    mutating func take() -> Taken {
        var count = 0
        var end = 0
        while end < items.count, end == 0 || count + items[end].deliveries <= turnLimit {
            count += items[end].deliveries
            end += 1
        }
        let taken = items[..<end].map(\.item)
        items.removeFirst(end)
        waiting -= count
        isScheduled = !items.isEmpty
        return Taken(items: taken, more: isScheduled, belowLowWater: waiting < lowWater)
    }

    /// Whether a poster that found the mailbox full may go on now.
    var isBelowLowWater: Bool { waiting < lowWater }
}

extension LoopMailboxState.Taken: Sendable where Item: Sendable {}
extension LoopMailboxState: Sendable where Item: Sendable {}
