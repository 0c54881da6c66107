import Crypto
import Foundation
import RedisClient
import StatusCore
import Synchronization

/// Apps and their configs (SPEC §3, §7 admin API), with a short-lived per-node cache so that a config change made on
/// any node takes effect everywhere within ``AppRegistry/cacheTTL``.
final class AppRegistry: Sendable {
    /// How long a node trusts its cached copy of an app; SPEC §3 wants changes everywhere within 1 s.
    static let cacheTTL: Duration = .milliseconds(500)

    private let redis: RedisClient
    private let scripts: ScriptLibrary
    private let cache = Mutex<[String: (record: AppRecord?, fetched: ContinuousClock.Instant)]>([:])

    init(redis: RedisClient, scripts: ScriptLibrary) {
        self.redis = redis
        self.scripts = scripts
    }

    /// Creates an app; returns the record and the API key (shown once, stored only as a digest).
    func create(appId: String, config: AppConfig) async throws -> (record: AppRecord, apiKey: String) {
        let apiKey = "sk_" + Self.randomHex(bytes: 24)
        let secret = Self.randomHex(bytes: 32)
        let raw = try JSONCoding.string(config)
        let digest = Self.digest(apiKey)
        let keys = RedisKeys(appId: appId)
        let created = try await redis.evalScript(
            scripts.appCreate,
            keys: [keys.app],
            arguments: [raw, digest, secret, String(WallClock.nowMs())]
        )
        guard created.int == 1 else { throw StatusError(.appExists, "app \(appId) exists") }
        _ = try await redis.pipeline([["SET", RedisKeys.apiKey(digest: digest), appId], ["SADD", RedisKeys.apps, appId]])
        let record = AppRecord(appId: appId, config: config, rawConfig: raw, apiKeyDigest: digest, tokenSecret: secret)
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

    /// Deletes the app record (so its keys and tokens stop working at once), then every key of the app.
    func delete(_ appId: String) async throws {
        let record = try await require(appId)
        let keys = RedisKeys(appId: appId)
        _ = try await redis.pipeline([
            ["DEL", keys.app],
            ["DEL", RedisKeys.apiKey(digest: record.apiKeyDigest)],
            ["SREM", RedisKeys.apps, appId],
        ])
        store(nil, for: appId)
        for pattern in keys.allKeysPatterns {
            try await deleteKeys(matching: pattern)
        }
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

    /// SHA-256 of an API key, hex.
    static func digest(_ apiKey: String) -> String {
        SHA256.hash(data: Data(apiKey.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    private func fetch(_ appId: String) async throws -> AppRecord? {
        let reply = try await redis.send("HMGET", RedisKeys(appId: appId).app, "config", "key", "secret")
        guard let values = reply.array, values.count == 3, let raw = values[0].string, let digest = values[1].string,
            let secret = values[2].string
        else { return nil }
        let config = try JSONCoding.decoder.decode(AppConfig.self, from: Data(raw.utf8))
        return AppRecord(appId: appId, config: config, rawConfig: raw, apiKeyDigest: digest, tokenSecret: secret)
    }

    private func store(_ record: AppRecord?, for appId: String) {
        cache.withLock { $0[appId] = (record, ContinuousClock.now) }
    }

    private func deleteKeys(matching pattern: String) async throws {
        var cursor = "0"
        repeat {
            let reply = try await redis.send("SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
            guard let parts = reply.array, parts.count == 2 else { return }
            cursor = parts[0].string ?? "0"
            let found = parts[1].array?.compactMap(\.string) ?? []
            if !found.isEmpty { _ = try await redis.send(["UNLINK"] + found) }
        } while cursor != "0"
    }

    private static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
