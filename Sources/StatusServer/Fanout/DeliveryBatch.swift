import NIOCore

/// Status events of one bus batch, grouped by the event loop of each recipient's channel.
///
/// ``send()`` gives each loop its share in one task: the loop writes every event to its sockets without flushing, then
/// flushes each socket once, so a device that receives several events in a batch costs one flush (one `writev`).
struct DeliveryBatch {
    /// Per event loop: each event once, with the sessions on that loop that receive it.
    private var loops: [ObjectIdentifier: (loop: any EventLoop, items: [(StatusEvent, [DeviceSession])])] = [:]
    private var count = 0

    /// Adds one change for its recipients; the event is encoded once, here, and shared by all of them.
    mutating func add(_ change: StatusChange, to recipients: [DeviceSession]) {
        guard !recipients.isEmpty else { return }
        let event = StatusEvent(change.status)
        var byLoop: [ObjectIdentifier: (loop: any EventLoop, sessions: [DeviceSession])] = [:]
        for session in recipients {
            byLoop[ObjectIdentifier(session.eventLoop), default: (session.eventLoop, [])].sessions.append(session)
        }
        for (key, share) in byLoop {
            loops[key, default: (share.loop, [])].items.append((event, share.sessions))
        }
        count += recipients.count
    }

    /// Hands every loop its deliveries.
    mutating func send() {
        guard count > 0 else { return }
        for (loop, items) in loops.values {
            loop.execute {
                var written: [DeviceChannelHandler] = []
                for (event, sessions) in items {
                    for session in sessions {
                        if let handler = session.deliver(event) { written.append(handler) }
                    }
                }
                for handler in written { handler.flushIfNeeded() }
            }
        }
        Metrics.eventsDelivered.increment(by: count)
        loops = [:]
        count = 0
    }
}
