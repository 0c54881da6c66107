import Foundation
import Logging
import RedisClient

/// The shared queue of earlier versions: the stream `st:webhooks` (fields `app`, `body`) and the retry schedule
/// `st:webhooks:retry` (JSON members with `app` and `body`). A node of this version moves what they still hold into
/// the apps' own queues (``WebhookQueue``) and deletes them, so an upgrade loses no event. Moving is at least once: a
/// node that dies between the enqueue and the removal leaves the event to be moved again, delivered twice.
struct WebhookLegacyQueue: Sendable {
    let redis: RedisClient
    let queue: WebhookQueue
    let logger: Logger

    /// The stream every node of an earlier version appended to.
    static let stream = "st:webhooks"
    /// The retries of an earlier version.
    static let retries = "st:webhooks:retry"

    /// A retry as an earlier version stored it.
    private struct Retry: Decodable {
        var app: String
        var body: String
    }

    /// Moves everything left in the old queue; returns how many events were moved.
    @discardableResult
    func drain() async throws -> Int {
        var moved = 0
        while true {
            let entries = try await redis.send("XRANGE", Self.stream, "-", "+", "COUNT", "100").array ?? []
            guard !entries.isEmpty else { break }
            var ids: [String] = []
            for entry in entries {
                guard let parts = entry.array, parts.count == 2, let id = parts[0].string else { continue }
                ids.append(id)
                let values = parts[1].array ?? []
                var fields: [String: String] = [:]
                for index in stride(from: 0, to: values.count - 1, by: 2) {
                    if let name = values[index].string, let value = values[index + 1].string { fields[name] = value }
                }
                if let appId = fields["app"], let body = fields["body"] {
                    try await move(appId: appId, body: body)
                    moved += 1
                }
            }
            _ = try await redis.send(["XDEL", Self.stream] + ids)
        }
        // Empty now: the stream and its consumer group go.
        _ = try await redis.send("DEL", Self.stream)
        while true {
            let members = try await redis.send("ZRANGE", Self.retries, "0", "99").array?.compactMap(\.string) ?? []
            guard !members.isEmpty else { break }
            for member in members {
                if let retry = try? JSONCoding.decoder.decode(Retry.self, from: Data(member.utf8)) {
                    try await move(appId: retry.app, body: retry.body)
                    moved += 1
                }
            }
            _ = try await redis.send(["ZREM", Self.retries] + members)
        }
        if moved > 0 { logger.notice("moved webhook events of an earlier version to the apps' queues", metadata: ["events": "\(moved)"]) }
        return moved
    }

    /// Queues one old event in its app's queue, with no generation (whichever app holds the appId receives it, as the
    /// earlier version did).
    private func move(appId: String, body: String) async throws {
        let enqueued = try await queue.queue.enqueue(appId: appId, body: body, generation: "", bound: queue.maxPendingPerApp)
        if enqueued.dropped > 0 { Metrics.webhookDeliveries("dropped").increment(by: enqueued.dropped) }
        if enqueued.first { try await queue.index.add(appId) }
    }
}
