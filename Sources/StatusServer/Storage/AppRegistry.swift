import Crypto
import Foundation
import RedisClient
import StatusCore
import Synchronization

/// Apps and their configs (SPEC §3, §7 admin API), with a short-lived per-node cache so that a config change made on
/// any node takes effect everywhere within ``AppRegistry/cacheTTL``.
///
/// The cache holds existing apps only: a lookup of an appId that does not exist is not remembered, so requests naming
/// made-up appIds (unauthenticated, with a wrong key) allocate nothing that outlives them. It is also capped at
/// ``AppRegistry/cacheCapacity`` entries, past which stale entries are dropped, and then all.
final class AppRegistry: Sendable {
    /// How long a node trusts its cached copy of an app; SPEC §3 wants changes everywhere within 1 s.
    static let cacheTTL: Duration = .milliseconds(500)
    /// The most apps cached per node.
    static let cacheCapacity = 10_000

    private let redis: RedisClient
    private let scripts: ScriptLibrary
    private let cache = Mutex<[String: (record: AppRecord, fetched: ContinuousClock.Instant)]>([:])
    let deletion: AppDeletion

    init(redis: RedisClient, scripts: ScriptLibrary) {
        self.redis = redis
        self.scripts = scripts
        self.deletion = AppDeletion(redis: redis, scripts: scripts)
    }

    /// How many apps this node caches (for tests of the cache bound).
    var cachedCount: Int { cache.withLock { $0.count } }

    /// Creates an app; returns the record and the API key (shown once, stored only as a digest).
    func create(appId: String, config: AppConfig) async throws -> (record: AppRecord, apiKey: String) {
        let apiKey = "sk_" + Self.randomHex(bytes: 24)
        let secret = Self.randomHex(bytes: 32)
        let raw = try JSONCoding.string(config)
        let digest = Self.digest(apiKey)
        let keys = RedisKeys(appId: appId)
        let createdAt = String(WallClock.nowMs())
        let created = try await redis.evalScript(
            scripts.appCreate,
            keys: [keys.app, keys.deletionTombstone],
            arguments: [raw, digest, secret, createdAt]
        )
        switch created.int {
        case 1: break
        case -1: throw StatusError(.appExists, "app \(appId) is still being deleted, try again shortly")
        default: throw StatusError(.appExists, "app \(appId) exists")
        }
        _ = try await redis.pipeline([["SET", RedisKeys.apiKey(digest: digest), appId], ["SADD", RedisKeys.apps, appId]])
        var record = AppRecord(appId: appId, config: config, rawConfig: raw, apiKeyDigest: digest, tokenSecret: secret)
        record.generation = createdAt
        store(record, for: appId)
        return (record, apiKey)
    }

    /// The app, from cache when fresh; throws `APP_NOT_FOUND`.
    func require(_ appId: String) async throws -> AppRecord {
        guard let record = try await find(appId) else { throw StatusError(.appNotFound, "app \(appId) not found") }
        return record
    }

    /// The app, from cache when fresh, or nil.
    func find(_ appId: String) async throws -> AppRecord? {
        let now = ContinuousClock.now
        if let cached = cache.withLock({ $0[appId] }), now - cached.fetched < Self.cacheTTL {
            return cached.record
        }
        let record = try await fetch(appId)
        store(record, for: appId)
        return record
    }

    /// Applies a partial config (all or nothing) and returns the new config.
    func patch(_ appId: String, with patch: JSONValue) async throws -> AppConfig {
        for _ in 0..<16 {
            guard let current = try await fetch(appId) else { throw StatusError(.appNotFound, "app \(appId) not found") }
            let updated = try AppConfigPatch.apply(patch, to: current.config)
            let raw = try JSONCoding.string(updated)
            let result = try await redis.evalScript(
                scripts.appConfigUpdate,
                keys: [RedisKeys(appId: appId).app],
                arguments: [current.rawConfig, raw]
            )
            switch result.int {
            case 1:
                var record = current
                record.config = updated
                record.rawConfig = raw
                store(record, for: appId)
                return updated
            case -1:
                throw StatusError(.appNotFound, "app \(appId) not found")
            default:
                continue
            }
        }
        throw StatusError(.unavailable, "config is changing too fast, try again")
    }

    /// Deletes the app crash-safely (``AppDeletion``): the record is replaced by a tombstone at once (its key and tokens
    /// stop working), then every key goes. Throws `APP_NOT_FOUND` when there is neither app nor unfinished deletion.
    func delete(_ appId: String) async throws {
        invalidate(appId)
        defer { invalidate(appId) }
        try await deletion.delete(appId)
    }

    /// Finishes deletions that a node began and did not complete (it died); housekeeping calls this periodically.
    func finishUnfinishedDeletions() async throws {
        try await deletion.finishUnfinished()
    }

    /// Forgets the cached copy of an app (its config changed on another node, or it was deleted).
    func invalidate(_ appId: String) {
        _ = cache.withLock { $0.removeValue(forKey: appId) }
    }

    /// The appId an API key belongs to, if any.
    func appId(forAPIKey apiKey: String) async throws -> String? {
        try await redis.send("GET", RedisKeys.apiKey(digest: Self.digest(apiKey))).string
    }

    /// Every appId (for node-wide sweeps).
    func allAppIds() async throws -> [String] {
        try await redis.send("SMEMBERS", RedisKeys.apps).array?.compactMap(\.string) ?? []
    }

    /// SHA-256 of an API key, lowercase hex.
    static func digest(_ apiKey: String) -> String {
        hex(SHA256.hash(data: Array(apiKey.utf8)))
    }

    /// Lowercase hex of `bytes` (`String(format:)` per byte cost more than the hash itself).
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var characters: [UInt8] = []
        characters.reserveCapacity(64)
        for byte in bytes {
            characters.append(digits[Int(byte >> 4)])
            characters.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: characters, as: UTF8.self)
    }

    private func fetch(_ appId: String) async throws -> AppRecord? {
        let keys = RedisKeys(appId: appId)
        let replies = try await redis.pipeline([["HMGET", keys.app, "config", "key", "secret", "createdAt"], ["EXISTS", keys.appWideListeners]])
        guard let values = replies[0].array, values.count == 4, let raw = values[0].string, let digest = values[1].string,
            let secret = values[2].string
        else { return nil }
        let config = try JSONCoding.decoder.decode(AppConfig.self, from: Data(raw.utf8))
        var record = AppRecord(appId: appId, config: config, rawConfig: raw, apiKeyDigest: digest, tokenSecret: secret)
        record.logsRecentChanges = replies[1].int == 1
        record.generation = values[3].string ?? ""
        return record
    }

    /// Caches an existing app; forgets a missing one (negative lookups are never cached).
    private func store(_ record: AppRecord?, for appId: String) {
        let now = ContinuousClock.now
        cache.withLock { cache in
            guard let record else {
                cache.removeValue(forKey: appId)
                return
            }
            if cache[appId] == nil, cache.count >= Self.cacheCapacity {
                cache = cache.filter { now - $0.value.fetched < Self.cacheTTL }
                if cache.count >= Self.cacheCapacity { cache.removeAll(keepingCapacity: false) }
            }
            cache[appId] = (record, now)
        }
    }

    private static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return hex((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
