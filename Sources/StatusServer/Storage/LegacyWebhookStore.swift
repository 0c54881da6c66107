import Foundation
import RedisClient

/// The shared webhook queue of earlier versions, read a batch at a time and deleted as ``WebhookLegacyQueue`` moves its
/// events into the apps' own queues: the stream `st:webhooks` (fields `app`, `body`) and the retry schedule
/// `st:webhooks:retry` (JSON members with `app` and `body`).
struct LegacyWebhookStore: Sendable {
    let redis: RedisClient

    /// The stream every node of an earlier version appended to.
    static let stream = "st:webhooks"
    /// The retries of an earlier version.
    static let retries = "st:webhooks:retry"

    /// An event of the old stream: its id, and its app and body when the entry has them.
    struct StreamEntry: Sendable {
        var id: String
        var appId: String?
        var body: String?
    }

    /// A retry as an earlier version stored it.
    struct Retry: Decodable, Sendable {
        var app: String
        var body: String
    }

    /// The oldest (up to 100) entries of the stream; an entry without an id is skipped.
    func streamEntries() async throws -> [StreamEntry] {
        let entries = try await redis.send("XRANGE", Self.stream, "-", "+", "COUNT", "100").array ?? []
        return entries.compactMap { entry in
            guard let parts = entry.array, parts.count == 2, let id = parts[0].string else { return nil }
            let values = parts[1].array ?? []
            var fields: [String: String] = [:]
            for index in stride(from: 0, to: values.count - 1, by: 2) {
                if let name = values[index].string, let value = values[index + 1].string { fields[name] = value }
            }
            return StreamEntry(id: id, appId: fields["app"], body: fields["body"])
        }
    }

    /// Deletes moved entries of the stream.
    func deleteStreamEntries(_ ids: [String]) async throws {
        _ = try await redis.send(["XDEL", Self.stream] + ids)
    }

    /// Deletes the emptied stream (and its consumer group).
    func deleteStream() async throws {
        _ = try await redis.send("DEL", Self.stream)
    }

    /// The first (up to 100) members of the retry schedule, with the retry each stands for (nil when it does not parse).
    func retries() async throws -> [(member: String, retry: Retry?)] {
        let members = try await redis.send("ZRANGE", Self.retries, "0", "99").array?.compactMap(\.string) ?? []
        return members.map { ($0, try? JSONCoding.decoder.decode(Retry.self, from: Data($0.utf8))) }
    }

    /// Deletes moved members of the retry schedule.
    func deleteRetries(_ members: [String]) async throws {
        _ = try await redis.send(["ZREM", Self.retries] + members)
    }
}
