import Foundation
import Synchronization

/// User tokens whose signature already checked out, with what they say, so that a device reconnecting with the same
/// token (every reconnect does) skips the JSON decoding of the claims (twice: once to find the app, once by JWTKit) and
/// the HMAC; in a churn profile those were a twentieth of the node's CPU.
///
/// The cache only saves that work, never a check: an entry counts only while its app's secret is still the one the
/// signature was checked with and its `exp` has not passed, and the user's token generation is checked against Redis
/// on every connect (inside `device_connect.lua`), so a rotated secret, an expired token or a deleted user is refused
/// exactly as without the cache. Only tokens that verified are added, so made-up tokens cannot fill it; it holds at
/// most ``capacity`` tokens and starts over when full.
final class VerifiedTokenCache: Sendable {
    /// What a verified token says.
    struct Entry: Sendable, Equatable {
        var appId: String
        var userId: String
        var generation: String
        /// `exp`, seconds since the epoch: the token is refused from this second on.
        var expiresAt: Double
        /// The app secret the signature was checked with.
        var secret: String
    }

    /// The most tokens held.
    let capacity: Int
    private let entries = Mutex<[String: Entry]>([:])

    init(capacity: Int = 16_384) {
        self.capacity = capacity
    }

    /// The entry of a token that verified before and has not expired at `now` (seconds since the epoch).
    func entry(for token: String, now: Double) -> Entry? {
        guard let entry = entries.withLock({ $0[token] }), now < entry.expiresAt else { return nil }
        return entry
    }

    /// Remembers a token whose signature and claims checked out.
    func remember(_ token: String, _ entry: Entry) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = entry
        }
    }

    /// How many tokens are held (for tests of the bound).
    var count: Int { entries.withLock { $0.count } }
}
