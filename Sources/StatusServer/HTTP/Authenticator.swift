import Crypto
import Foundation
import Hummingbird
import StatusCore

/// Checks the bearer credentials of SPEC §7: the admin key for the admin API, an app's API key for its server API.
struct Authenticator: Sendable {
    let adminKey: String
    let apps: AppRegistry
    let verifiedKeys = VerifiedKeyCache()

    /// Throws `UNAUTHORIZED` unless the request carries the admin key.
    func requireAdmin(_ request: Request) throws {
        guard let token = Self.bearer(request), Self.constantTimeEqual(token, adminKey) else {
            throw StatusError(.unauthorized, "missing or wrong admin key")
        }
    }

    /// The app named in the path, after checking the request's API key: a key of another app is `FORBIDDEN`,
    /// anything else wrong is `UNAUTHORIZED`.
    func requireApp(_ request: Request, appId rawAppId: String) async throws -> AppRecord {
        guard let token = Self.bearer(request) else { throw StatusError(.unauthorized, "missing API key") }
        let appId = try Identifiers.appId(rawAppId)
        let (digest, cached) = verifiedKeys.digest(of: token)
        if let record = try await apps.find(appId), Self.constantTimeEqual(digest, record.apiKeyDigest) {
            if !cached { verifiedKeys.remember(token, digest: digest) }
            return record
        }
        if let owner = try await apps.appId(forAPIKey: token), owner != appId {
            throw StatusError(.forbidden, "this API key belongs to another app")
        }
        throw StatusError(.unauthorized, "wrong API key")
    }

    /// The bearer token of the `Authorization` header: the scheme matched case-insensitively, spaces and tabs around
    /// the token dropped. Done on the header's bytes, with no lowercased copies (it runs on every request).
    static func bearer(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        let bytes = Array(header.utf8)
        let scheme = Array("bearer ".utf8)
        guard bytes.count > scheme.count else { return nil }
        for index in scheme.indices where bytes[index] | 0x20 != scheme[index] { return nil }
        var start = scheme.count
        var end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// Compares two secrets without leaking where they differ.
    static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf8)
        let right = Array(rhs.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}
