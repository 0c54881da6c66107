import Foundation
import RedisClient

/// The durable schedule of webhook retries: a sorted set of ``WebhookRetryEntry`` JSON members scored by the epoch ms
/// (Redis clock) at which they are due. A node takes due members under a lease (it moves their score past the lease),
/// so a node that dies mid-delivery leaves them to be taken again once the lease runs out. Each script touches one key.
struct WebhookRetries: Sendable {
    let redis: RedisClient

    /// The sorted set.
    static let key = "st:webhooks:retry"

    /// Takes up to ARGV[2] members due now and hides them for ARGV[1] ms; returns them.
    static let lease = RedisScript(
        name: "webhook_retry_lease",
        source: """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
            for _, member in ipairs(due) do
                redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), member)
            end
            return due
            """
    )

    /// Schedules ARGV[1] ARGV[2] ms from now and removes ARGV[3] (the attempt it follows) when not empty.
    static let schedule = RedisScript(
        name: "webhook_retry_schedule",
        source: """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
            if ARGV[3] ~= '' then
                redis.call('ZREM', KEYS[1], ARGV[3])
            end
            return 1
            """
    )

    /// Leases up to `limit` due retries for `lease`; members that do not parse are removed.
    func takeDue(limit: Int, lease: Duration) async throws -> [WebhookJob] {
        guard limit > 0 else { return [] }
        let reply = try await redis.evalScript(Self.lease, keys: [Self.key], arguments: [String(lease.inMilliseconds), String(limit)])
        var jobs: [WebhookJob] = []
        var unusable: [String] = []
        for member in reply.array?.compactMap(\.string) ?? [] {
            if let job = WebhookRetryEntry.job(member: member) {
                jobs.append(job)
            } else {
                unusable.append(member)
            }
        }
        if !unusable.isEmpty { _ = try await redis.send(["ZREM", Self.key] + unusable) }
        return jobs
    }

    /// Schedules the next attempt of `job` after `delay`; a job that was itself a retry is replaced.
    func schedule(_ job: WebhookJob, attempt: Int, after delay: Duration) async throws {
        let entry = WebhookRetryEntry(id: job.eventId, app: job.appId, body: job.body, attempt: attempt)
        var previous = ""
        if case .retry(let member) = job.source { previous = member }
        _ = try await redis.evalScript(
            Self.schedule,
            keys: [Self.key],
            arguments: [try JSONCoding.string(entry), String(max(0, delay.inMilliseconds)), previous]
        )
    }

    /// Forgets a retry (delivered, dropped, or its app has no webhook any more).
    func remove(member: String) async throws {
        _ = try await redis.send("ZREM", Self.key, member)
    }
}
