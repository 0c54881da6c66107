import Logging

/// Empties the shared queue of earlier versions (``LegacyWebhookStore``): a node of this version moves what it still
/// holds into the apps' own queues (``WebhookQueue``) and deletes it, so an upgrade loses no event. Moving is at least
/// once: a node that dies between the enqueue and the removal leaves the event to be moved again, delivered twice.
struct WebhookLegacyQueue: Sendable {
    let store: LegacyWebhookStore
    let queue: WebhookQueue
    /// Counts the events a full queue dropped.
    let metrics: NodeMetrics
    let logger: Logger

    /// Moves everything left in the old queue; returns how many events were moved.
    @discardableResult
    func drain() async throws -> Int {
        var moved = 0
        while true {
            let entries = try await store.streamEntries()
            guard !entries.isEmpty else { break }
            for entry in entries {
                if let appId = entry.appId, let body = entry.body {
                    try await move(appId: appId, body: body)
                    moved += 1
                }
            }
            try await store.deleteStreamEntries(entries.map(\.id))
        }
        // Empty now: the stream and its consumer group go.
        try await store.deleteStream()
        while true {
            let retries = try await store.retries()
            guard !retries.isEmpty else { break }
            for case (_, let retry?) in retries {
                try await move(appId: retry.app, body: retry.body)
                moved += 1
            }
            try await store.deleteRetries(retries.map(\.member))
        }
        if moved > 0 { logger.notice("moved webhook events of an earlier version to the apps' queues", metadata: ["events": "\(moved)"]) }
        return moved
    }

    /// Queues one old event in its app's queue, with no generation (whichever app holds the appId receives it, as the
    /// earlier version did).
    private func move(appId: String, body: String) async throws {
        let enqueued = try await queue.queue.enqueue(appId: appId, body: body, generation: "", bound: queue.maxPendingPerApp)
        if enqueued.dropped > 0 { metrics.webhooksDropped.increment(by: enqueued.dropped) }
        if enqueued.first { try await queue.index.add(appId) }
    }
}
