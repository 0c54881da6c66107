import Synchronization

/// API keys that already matched their app's stored digest, mapped to that digest, so that a request with a known key
/// skips the SHA-256 and hex formatting (SPEC §7 keeps only the digest in Redis; hashing every request cost about a
/// seventh of the server's CPU).
///
/// The cache only saves the hashing: the caller still compares the cached digest with the app's current one in
/// constant time, so a rotated or deleted key stops working as soon as the app record says so. Only keys that verified
/// are added, so requests with made-up keys cannot fill it; it holds at most ``capacity`` keys and starts over when
/// full.
final class VerifiedKeyCache: Sendable {
    /// The most keys held.
    let capacity: Int
    private let digests = Mutex<[String: String]>([:])

    init(capacity: Int = 4096) {
        self.capacity = capacity
    }

    /// The digest of `apiKey`: cached when the key verified before, else computed (and not cached).
    func digest(of apiKey: String) -> (digest: String, cached: Bool) {
        if let digest = digests.withLock({ $0[apiKey] }) { return (digest, true) }
        return (AppRegistry.digest(apiKey), false)
    }

    /// Remembers a key that matched its app's digest.
    func remember(_ apiKey: String, digest: String) {
        digests.withLock { digests in
            if digests.count >= capacity { digests.removeAll(keepingCapacity: true) }
            digests[apiKey] = digest
        }
    }

    /// How many keys are held (for tests of the bound).
    var count: Int { digests.withLock { $0.count } }
}
