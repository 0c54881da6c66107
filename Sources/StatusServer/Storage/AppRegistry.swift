import Crypto
import Foundation
import RedisClient
import StatusCore
import Synchronization

/// Apps and their configs (SPEC §3, §7 admin API), with a short-lived per-node cache so that a config change made on
/// any node takes effect everywhere within ``AppRegistry/cacheTTL``.
///
/// The cache of existing apps is capped at ``AppRegistry/cacheCapacity`` entries, past which stale entries are dropped,
/// and then all. AppIds found missing are remembered too, for as long and as many (``ShortLivedCache``), so that a
/// flood of requests naming made-up apps costs Redis one lookup per appId and half second, not one per request; an
/// app created on this node leaves that cache at once, and one created elsewhere when its `config` bus message
/// arrives (or after 500 ms at most). The owner of an API key, looked up to tell a key of another app (`FORBIDDEN`)
/// from a wrong key, is remembered likewise, by the key's digest.
final class AppRegistry: Sendable {
    /// How long a node trusts its cached copy of an app; SPEC §3 wants changes everywhere within 1 s.
    static let cacheTTL: Duration = .milliseconds(500)
    /// The most apps cached per node.
    static let cacheCapacity = 10_000

    private let redis: RedisClient
    private let scripts: ScriptLibrary
    /// Times the cached copies (monotonic) and dates created apps (wall).
    let clock: any NodeClock
    private var runner: ScriptRunner { ScriptRunner(redis: redis, scripts: scripts) }
    /// `fetched`: when the copy was last trusted from (a read, or a failed read that served it stale); `read`: when it was
    /// last read from Redis.
    private let cache = Mutex<[String: (record: AppRecord, fetched: ContinuousClock.Instant, read: ContinuousClock.Instant)]>([:])
    /// AppIds found missing lately.
    private let missing = Mutex(ShortLivedCache<Bool>(ttl: cacheTTL, capacity: cacheCapacity))
    /// The owner of API keys looked up lately ("" when none), by digest.
    private let keyOwners = Mutex(ShortLivedCache<String>(ttl: cacheTTL, capacity: cacheCapacity))
    /// The reads of apps under way, and of API keys' owners, which calls that miss the cache meanwhile wait for.
    private let reads = SingleFlight<AppRecord?>()
    private let ownerReads = SingleFlight<String?>()
    let deletion: AppDeletion

    init(redis: RedisClient, scripts: ScriptLibrary, clock: any NodeClock) {
        self.redis = redis
        self.scripts = scripts
        self.clock = clock
        self.deletion = AppDeletion(redis: redis, scripts: scripts)
    }

    /// How many apps this node caches (for tests of the cache bound).
    var cachedCount: Int { cache.withLock { $0.count } }
    /// Whether `appId` is being read from Redis now (for tests).
    func isBeingRead(_ appId: String) -> Bool { reads.isReading(appId) }
    /// How many missing appIds this node remembers (for tests of the bound).
    var missingCount: Int { missing.withLock { $0.count } }

    /// Creates an app; returns the record and the API key (shown once, stored only as a digest).
    func create(appId: String, config: AppConfig) async throws -> (record: AppRecord, apiKey: String) {
        let apiKey = "sk_" + Self.randomHex(bytes: 24)
        let secret = Self.randomHex(bytes: 32)
        let raw = try JSONCoding.string(config)
        let digest = Self.digest(apiKey)
        let keys = RedisKeys(appId: appId)
        let createdAt = String(clock.nowMs)
        let created = try await runner.run(
            AppCreate.self,
            keys: .init(app: keys),
            arguments: .init(config: raw, apiKeyDigest: digest, tokenSecret: secret, createdAt: createdAt)
        )
        switch created {
        case .created: break
        case .beingDeleted: throw StatusError(.appExists, "app \(appId) is still being deleted, try again shortly")
        case .exists: throw StatusError(.appExists, "app \(appId) exists")
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
        let now = clock.now
        if let cached = cache.withLock({ $0[appId] }), now - cached.fetched < Self.cacheTTL {
            return cached.record
        }
        if missing.withLock({ $0.value(for: appId, now: now) }) != nil { return nil }
        // While the copy is being read again, a copy stale by less than ``servedWhileReading`` serves without waiting:
        // the callers that would wait on the read include the fan-out, which every delivery waits on.
        if reads.isReading(appId), let cached = cache.withLock({ $0[appId] }),
            now - cached.fetched < Self.cacheTTL + Self.servedWhileReading
        {
            return cached.record
        }
        // Otherwise the calls that find it stale while it is being read wait for that read (``SingleFlight``).
        return try await reads.run(appId) {
            let record: AppRecord?
            do {
                record = try await fetch(appId)
            } catch let error as RedisClientError where error.isConnectionProblem {
                return try staleCopy(of: appId, now: now, error: error)
            }
            store(record, for: appId)
            return record
        }
    }

    /// How long past ``cacheTTL`` a copy serves while another call reads the app again: with the TTL, 750 ms, within
    /// SPEC §3's second for a config change to reach every node. A read that takes longer makes callers wait for it.
    static let servedWhileReading: Duration = .milliseconds(250)

    /// How long a copy may serve while the app's own key cannot be read, and how often it is tried again meanwhile.
    static let staleLimit: Duration = .seconds(60)
    static let staleRetry: Duration = .milliseconds(250)

    /// The copy held of an app whose key cannot be read now (SPEC §9): while the cluster shard of `{appId}` fails over,
    /// only the users on that shard are unreachable, not every user of the app. The copy serves for up to
    /// ``staleLimit`` after it was last read, the read tried again every ``staleRetry`` meanwhile; without one, `error`.
    private func staleCopy(of appId: String, now: ContinuousClock.Instant, error: RedisClientError) throws -> AppRecord {
        let served = cache.withLock { cache -> AppRecord? in
            guard let cached = cache[appId], now - cached.read < Self.staleLimit else { return nil }
            if now - cached.fetched >= Self.cacheTTL {
                cache[appId]?.fetched = max(cached.fetched, now - Self.cacheTTL + Self.staleRetry)
            }
            return cached.record
        }
        guard let served else { throw error }
        return served
    }

    /// Applies a partial config (all or nothing) and returns the new config.
    func patch(_ appId: String, with patch: JSONValue) async throws -> AppConfig {
        for _ in 0..<16 {
            guard let current = try await fetch(appId) else { throw StatusError(.appNotFound, "app \(appId) not found") }
            let updated = try AppConfigPatch.apply(patch, to: current.config)
            let raw = try JSONCoding.string(updated)
            let result = try await runner.run(
                AppConfigUpdate.self,
                keys: .init(app: RedisKeys(appId: appId)),
                arguments: .init(expected: current.rawConfig, new: raw)
            )
            switch result {
            case .written:
                var record = current
                record.config = updated
                record.rawConfig = raw
                store(record, for: appId)
                return updated
            case .noSuchApp:
                throw StatusError(.appNotFound, "app \(appId) not found")
            case .changedMeanwhile:
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

    /// Forgets what this node knows of an app (its config changed on another node, it was created or deleted).
    func invalidate(_ appId: String) {
        _ = cache.withLock { $0.removeValue(forKey: appId) }
        missing.withLock { $0.remove(appId) }
    }

    /// The appId an API key belongs to, if any; remembered for ``cacheTTL``.
    func appId(forAPIKey apiKey: String) async throws -> String? {
        let digest = Self.digest(apiKey)
        if let owner = keyOwners.withLock({ $0.value(for: digest, now: clock.now) }) { return owner.isEmpty ? nil : owner }
        return try await ownerReads.run(digest) {
            let owner = try await redis.send("GET", RedisKeys.apiKey(digest: digest)).string
            let now = clock.now
            keyOwners.withLock { $0.store(owner ?? "", for: digest, now: now) }
            return owner
        }
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

    /// Caches an existing app, or remembers a missing one.
    private func store(_ record: AppRecord?, for appId: String) {
        let now = clock.now
        missing.withLock { missing in
            if record == nil { missing.store(true, for: appId, now: now) } else { missing.remove(appId) }
        }
        cache.withLock { cache in
            guard let record else {
                cache.removeValue(forKey: appId)
                return
            }
            if cache[appId] == nil, cache.count >= Self.cacheCapacity {
                cache = cache.filter { now - $0.value.fetched < Self.cacheTTL }
                if cache.count >= Self.cacheCapacity { cache.removeAll(keepingCapacity: false) }
            }
            cache[appId] = (record, now, now)
        }
    }

    private static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return hex((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
