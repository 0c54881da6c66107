import NIOCore

/// Status events of one bus batch, grouped by the event loop of each recipient's channel.
///
/// ``send()`` gives each loop its share in one task: the loop writes every event to its sockets without flushing, then
/// flushes each socket once, so a device that receives several events in a batch costs one flush (one `writev`).
struct DeliveryBatch {
    private var loops: [ObjectIdentifier: (loop: any EventLoop, items: [(DeviceSession, StatusEvent)])] = [:]
    private var count = 0

    /// Adds one change for its recipients; the event is encoded once, here, and shared by all of them.
    mutating func add(_ change: StatusChange, to recipients: [DeviceSession]) {
        guard !recipients.isEmpty, let event = try? StatusEvent(change.status) else { return }
        for session in recipients {
            let key = ObjectIdentifier(session.eventLoop)
            if loops[key] == nil {
                loops[key] = (session.eventLoop, [])
            }
            loops[key]!.items.append((session, event))
        }
        count += recipients.count
    }

    /// Hands every loop its deliveries.
    mutating func send() {
        guard count > 0 else { return }
        for (loop, items) in loops.values {
            loop.execute {
                var written: [DeviceChannelHandler] = []
                for (session, event) in items {
                    if let handler = session.deliver(event) { written.append(handler) }
                }
                for handler in written { handler.flushIfNeeded() }
            }
        }
        Metrics.eventsDelivered.increment(by: count)
        loops = [:]
        count = 0
    }
}
