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

    /// The app named in the path (its segment as sent, percent-decoded here), after checking the request's API key: a
    /// key of another app is `FORBIDDEN`, anything else wrong is `UNAUTHORIZED`.
    func requireApp(_ request: Request, appIdSegment: String) async throws -> AppRecord {
        guard let token = Self.bearer(request) else { throw StatusError(.unauthorized, "missing API key") }
        let appId = try Identifiers.appId(pathSegment: appIdSegment)
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

    /// The app of the path (its `appId` parameter), authenticated by the request's API key.
    func app(_ request: Request, _ context: some RequestContext) async throws -> AppRecord {
        try await requireApp(request, appIdSegment: context.parameters.require("appId"))
    }

    /// The app and the userId of the path (percent-decoded once, then validated: SPEC §7 request hygiene).
    func user(_ request: Request, _ context: some RequestContext) async throws -> (AppRecord, String) {
        try await user(request, appIdSegment: context.parameters.require("appId"), userIdSegment: context.parameters.require("userId"))
    }

    /// The app and the userId of the path segments as sent (percent-decoded once, then validated).
    func user(_ request: Request, appIdSegment: String, userIdSegment: String) async throws -> (AppRecord, String) {
        let app = try await requireApp(request, appIdSegment: appIdSegment)
        return (app, try Identifiers.userId(pathSegment: userIdSegment))
    }

    /// The bearer token of the `Authorization` header: the scheme matched case-insensitively, spaces and tabs around
    /// the token dropped. Done in place on the header's UTF-8 bytes, with no copies (it runs on every request).
    static func bearer(_ request: Request) -> String? {
        guard var header = request.headers[.authorization] else { return nil }
        return header.withUTF8 { bytes -> String? in
            let scheme: StaticString = "bearer "
            guard bytes.count > scheme.utf8CodeUnitCount else { return nil }
            for index in 0..<scheme.utf8CodeUnitCount where bytes[index] | 0x20 != scheme.utf8Start[index] { return nil }
            var start = scheme.utf8CodeUnitCount
            var end = bytes.count
            while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }

    /// Compares two secrets without leaking where they differ: every byte is compared, on the strings' own storage.
    static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { left in
            rhs.withUTF8 { right in
                guard left.count == right.count else { return false }
                var difference: UInt8 = 0
                for index in 0..<left.count { difference |= left[index] ^ right[index] }
                return difference == 0
            }
        }
    }
}
