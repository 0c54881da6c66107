import Foundation
import JWTKit
import StatusCore
import Synchronization

/// The claims of a user token (SPEC §7): `sub` = userId, `app` = appId, `exp` in seconds, HS256 with the app's secret,
/// and `gen`, the user's token generation when the token was minted: deleting the user and creating them again changes
/// it, so older tokens stop working.
struct UserTokenClaims: JWTPayload {
    var sub: SubjectClaim
    var app: String
    var exp: ExpirationClaim
    var gen: String?

    /// Nothing beyond the signature here: `exp` is checked by ``TokenService`` against the node's clock.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Mints and verifies user tokens.
struct TokenService: Sendable {
    let apps: AppRegistry
    let users: UserDirectory
    /// Tokens that verified before (``VerifiedTokenCache``).
    let cache: VerifiedTokenCache
    /// The node's wall time: tokens expire by it (no leeway: a token is refused from its `exp` second on).
    let clock: any NodeClock

    /// A minted token and when it expires (epoch ms).
    struct MintedToken: Encodable, Sendable {
        var token: String
        var expiresAt: Int64
    }

    /// Mints a token valid for `ttlSeconds`, bound to the user's current generation; throws `USER_NOT_FOUND`.
    func mint(app: AppRecord, userId: String, ttlSeconds: Int) async throws -> MintedToken {
        guard let generation = try await users.tokenGeneration(appId: app.appId, userId: userId) else {
            throw StatusError(.userNotFound, "user \(userId) not found")
        }
        let expiry = (clock.wallNow.timeIntervalSince1970 + Double(ttlSeconds)).rounded(.down)
        let claims = UserTokenClaims(
            sub: .init(value: userId),
            app: app.appId,
            exp: .init(value: Date(timeIntervalSince1970: expiry)),
            gen: generation
        )
        let token = try await Self.keys(secret: app.tokenSecret).sign(claims)
        return MintedToken(token: token, expiresAt: Int64(expiry) * 1000)
    }

    /// What a token proves once its signature and claims checked out. The user's token generation is still to be
    /// compared with the stored one: `device_connect.lua` does it in the connect's own step (no round trip of its own).
    struct VerifiedToken: Sendable {
        var app: AppRecord
        var userId: String
        /// The `gen` claim: the user's token generation when the token was minted.
        var generation: String
    }

    /// Verifies a token against its app's current secret: a bad, expired or foreign token, or one of a deleted app, is
    /// `UNAUTHORIZED`. A token that verified before is taken from ``cache`` while its app keeps that secret and it has
    /// not expired. Returns the app, the userId and the token's generation (checked by the caller).
    func verify(_ token: String) async throws -> VerifiedToken {
        let now = clock.wallNow
        if let entry = cache.entry(for: token, now: now.timeIntervalSince1970), let app = try await apps.find(entry.appId),
            app.tokenSecret == entry.secret
        {
            return VerifiedToken(app: app, userId: entry.userId, generation: entry.generation)
        }
        let unverified: UserTokenClaims
        do {
            unverified = try Self.unverifiedClaims(token)
        } catch {
            throw StatusError(.unauthorized, "malformed token")
        }
        guard Identifiers.isValidAppId(unverified.app), let app = try await apps.find(unverified.app) else {
            throw StatusError(.unauthorized, "unknown app")
        }
        let claims: UserTokenClaims
        do {
            claims = try await Self.keys(secret: app.tokenSecret).verify(token, as: UserTokenClaims.self)
        } catch {
            throw StatusError(.unauthorized, "bad or expired token")
        }
        guard now < claims.exp.value else { throw StatusError(.unauthorized, "bad or expired token") }
        guard claims.app == app.appId, Identifiers.isValidUserId(claims.sub.value), let generation = claims.gen, !generation.isEmpty else {
            throw StatusError(.unauthorized, "bad token")
        }
        let entry = VerifiedTokenCache.Entry(
            appId: app.appId,
            userId: claims.sub.value,
            generation: generation,
            expiresAt: claims.exp.value.timeIntervalSince1970,
            secret: app.tokenSecret
        )
        cache.remember(token, entry)
        return VerifiedToken(app: app, userId: entry.userId, generation: generation)
    }

    /// Key collections by app secret: building one per token costs more than verifying the token.
    private static let keyCache = Mutex<[String: JWTKeyCollection]>([:])
    /// Secrets kept; past it the cache starts over (secrets of deleted apps must not pile up).
    private static let keyCacheLimit = 1024

    private static func keys(secret: String) async -> JWTKeyCollection {
        if let cached = keyCache.withLock({ $0[secret] }) { return cached }
        let keys = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        keyCache.withLock { cache in
            if cache.count >= keyCacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[secret] = keys
        }
        return keys
    }

    /// Reads the payload without checking the signature, only to find which app's secret to check it with.
    private static func unverifiedClaims(_ token: String) throws -> UserTokenClaims {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { throw StatusError(.unauthorized, "malformed token") }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { throw StatusError(.unauthorized, "malformed token") }
        return try JSONDecoder().decode(UserTokenClaims.self, from: data)
    }
}
