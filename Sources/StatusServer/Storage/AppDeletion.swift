import Foundation
import RedisClient
import StatusCore

/// Crash-safe app deletion (SPEC §7 `DELETE /v1/apps/{appId}`: all its data goes).
///
/// 1. The appId joins ``RedisKeys/deletingApps`` (so a sweep can find it), then one script swaps the app record for a
///    tombstone claimed by this node: from that moment the app is invisible (`APP_NOT_FOUND`, its key and tokens 401)
///    and cannot be created again (`APP_EXISTS` "still being deleted").
/// 2. The API-key index entry and the `st:apps` membership go, then every key of the app is scanned and unlinked. The
///    claim is renewed before each batch, so if this node dies its claim lapses after ``AppDeletion/claimLease`` and
///    any node's housekeeping (``finishUnfinished()``) takes over; a node that lost its claim stops. A claim belongs to
///    one run of the deletion (a fresh owner token per attempt), not to the node: the node's own housekeeping never
///    joins a deletion its request is running, and no two runs on one node hold a claim at once.
/// 3. A second scan runs once the tombstone is older than twice the app cache's lifetime, so that writes of requests
///    that were authenticated against a cached copy of the app just before it went are removed too.
/// 4. The tombstone goes, and the appId may be created again with nothing inherited.
struct AppDeletion: Sendable {
    let redis: RedisClient
    let scripts: ScriptLibrary
    /// How long a claim lasts without renewal.
    static let claimLease: Duration = .seconds(30)
    /// How old a tombstone must be before the last scan: by then no node trusts a cached copy of the app.
    static let settleTime: Duration = AppRegistry.cacheTTL * 2

    private var runner: ScriptRunner { ScriptRunner(redis: redis, scripts: scripts) }

    /// Deletes the app; throws `APP_NOT_FOUND` when there is neither an app nor an unfinished deletion. A deletion
    /// already under way (another request, or a node that died) is finished here when its claim can be taken, else
    /// left to its owner; either way the answer is success.
    func delete(_ appId: String) async throws {
        let keys = RedisKeys(appId: appId)
        let owner = Self.newOwner()
        _ = try await redis.send("SADD", RedisKeys.deletingApps, appId)
        let reply = try await runner.run(AppDeleteMark.self, keys: .init(app: keys), arguments: .init(owner: owner, leaseMs: leaseMs))
        switch reply {
        case .marked:
            try await run(appId, owner: owner)
        case .underWay:
            try await finish(appId)
        case .noSuchApp:
            _ = try await redis.send("SREM", RedisKeys.deletingApps, appId)
            throw StatusError(.appNotFound, "app \(appId) not found")
        }
    }

    /// Finishes every deletion left unfinished by a node that died (its claim lapsed).
    func finishUnfinished() async throws {
        let pending = try await redis.send("SMEMBERS", RedisKeys.deletingApps).array?.compactMap(\.string) ?? []
        for appId in pending where Identifiers.isValidAppId(appId) {
            try await finish(appId)
        }
    }

    /// Takes the claim on an existing tombstone and runs the deletion; forgets the appId when it has no tombstone.
    private func finish(_ appId: String) async throws {
        let owner = Self.newOwner()
        switch try await claim(appId, owner: owner) {
        case .claimed: try await run(appId, owner: owner)
        case .busy: return
        case .gone: _ = try await redis.send("SREM", RedisKeys.deletingApps, appId)
        }
    }

    /// A claim owner token for one run of a deletion.
    private static func newOwner() -> String { "del-" + UUID().uuidString }

    /// Steps 2–4, under a claim `owner` (this run) holds.
    private func run(_ appId: String, owner: String) async throws {
        let keys = RedisKeys(appId: appId)
        guard case .claimed(let digest, _) = try await claim(appId, owner: owner) else { return }
        var cleanup: [[String]] = [["SREM", RedisKeys.apps, appId]]
        if !digest.isEmpty {
            // The digest index must not point at the app any more; a new app gets a new random key, never this digest.
            cleanup.append(["DEL", RedisKeys.apiKey(digest: digest)])
        }
        _ = try await redis.pipeline(cleanup)
        guard try await unlinkKeys(of: appId, owner: owner) else { return }
        guard case .claimed(_, let age) = try await claim(appId, owner: owner) else { return }
        if age < Self.settleTime {
            try await Task.sleep(for: Self.settleTime - age)
        }
        guard try await unlinkKeys(of: appId, owner: owner) else { return }
        let finished = try await runner.run(AppDeleteFinish.self, keys: .init(app: keys), arguments: .init(owner: owner))
        if finished.value {
            _ = try await redis.send("SREM", RedisKeys.deletingApps, appId)
        }
    }

    /// Unlinks every key of the app except its tombstone, renewing the claim before each batch; false when the claim
    /// was lost (another node finishes the deletion).
    private func unlinkKeys(of appId: String, owner: String) async throws -> Bool {
        let keys = RedisKeys(appId: appId)
        struct ClaimLost: Error {}
        do {
            for pattern in keys.allKeysPatterns {
                // Every master of a cluster is scanned; the keys of one batch may live in many slots, so each is
                // unlinked by its own command (pipelined).
                try await redis.scanKeys(matching: pattern) { batch in
                    let found = batch.filter { $0 != keys.deletionTombstone }
                    guard case .claimed = try await claim(appId, owner: owner) else { throw ClaimLost() }
                    if !found.isEmpty { _ = try await redis.pipeline(found.map { ["UNLINK", $0] }) }
                }
            }
        } catch is ClaimLost {
            return false
        }
        return true
    }

    /// The outcome of taking or renewing the claim on a tombstone.
    private enum Claim {
        /// This node holds the claim; the tombstone's API key digest and age.
        case claimed(digest: String, age: Duration)
        /// Another live node holds it.
        case busy
        /// No tombstone: nothing to delete.
        case gone
    }

    private func claim(_ appId: String, owner: String) async throws -> Claim {
        let reply = try await runner.run(
            AppDeleteClaim.self,
            keys: .init(app: RedisKeys(appId: appId)),
            arguments: .init(owner: owner, leaseMs: leaseMs)
        )
        switch reply {
        case .claimed(let digest, let ageMs): return .claimed(digest: digest, age: .milliseconds(ageMs))
        case .busy: return .busy
        case .gone: return .gone
        }
    }

    private var leaseMs: Int64 {
        Self.claimLease.components.seconds * 1000
    }
}
