import Foundation
import RedisClient

/// One delivery to make: an event of the stream (first attempt, or taken over from a dead node) or a due retry.
struct WebhookJob: Sendable, Hashable {
    /// Where the job came from, which says how to settle it.
    enum Source: Sendable, Hashable {
        /// An entry of ``WebhookQueue/stream``, pending with this node's consumer until acknowledged.
        case stream(id: String)
        /// A member of ``WebhookRetries/key``, leased to this node.
        case retry(member: String)
    }

    /// Where the job came from.
    var source: Source
    /// The stream id the event was first queued under (it names the event in logs and retries).
    var eventId: String
    /// The app whose webhook receives the event.
    var appId: String
    /// The JSON event, POSTed and signed byte for byte.
    var body: String
    /// Attempts already made (0 for a fresh event).
    var attempt: Int

    /// What a stream read returned: the jobs, and the ids of entries that are deleted or malformed (to acknowledge).
    struct StreamBatch: Sendable {
        var jobs: [WebhookJob] = []
        var unusable: [String] = []
    }

    /// Parses the entries of an `XREADGROUP` or `XAUTOCLAIM` reply: `[[id, [field, value, ...]], ...]`.
    static func parse(entries: [RedisValue]) -> StreamBatch {
        var batch = StreamBatch()
        for entry in entries {
            guard let parts = entry.array, parts.count == 2, let id = parts[0].string else { continue }
            let values = parts[1].array ?? []
            var fields: [String: String] = [:]
            var index = 0
            while index + 1 < values.count {
                if let name = values[index].string, let value = values[index + 1].string { fields[name] = value }
                index += 2
            }
            guard let appId = fields["app"], let body = fields["body"] else {
                batch.unusable.append(id)
                continue
            }
            let attempt = fields["attempt"].flatMap { Int($0) } ?? 0
            batch.jobs.append(WebhookJob(source: .stream(id: id), eventId: id, appId: appId, body: body, attempt: attempt))
        }
        return batch
    }
}

/// A retry as stored in ``WebhookRetries/key``: the member string is this value's JSON, unique per event and attempt.
struct WebhookRetryEntry: Sendable, Codable, Hashable {
    /// The stream id the event was first queued under.
    var id: String
    /// The app.
    var app: String
    /// The JSON event.
    var body: String
    /// Attempts already made.
    var attempt: Int

    /// The job that delivers this retry, from its member string; nil when the member does not parse.
    static func job(member: String) -> WebhookJob? {
        guard let entry = try? JSONCoding.decoder.decode(WebhookRetryEntry.self, from: Data(member.utf8)) else { return nil }
        return WebhookJob(source: .retry(member: member), eventId: entry.id, appId: entry.app, body: entry.body, attempt: entry.attempt)
    }
}
