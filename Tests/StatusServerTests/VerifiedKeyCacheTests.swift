import Crypto
import Testing

@testable import StatusServer

/// The cache that spares a known API key its SHA-256: the digest it hands out is the key's real digest, only keys that
/// verified are held, and it never holds more than its capacity.
@Suite struct VerifiedKeyCacheTests {
    @Test func digestIsTheLowercaseHexSHA256() {
        #expect(AppRegistry.digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let cache = VerifiedKeyCache()
        #expect(cache.digest(of: "abc") == (AppRegistry.digest("abc"), false))
    }

    @Test func aRememberedKeyIsServedFromTheCache() {
        let cache = VerifiedKeyCache()
        let digest = AppRegistry.digest("sk_1")
        cache.remember("sk_1", digest: digest)
        #expect(cache.digest(of: "sk_1") == (digest, true))
        #expect(cache.digest(of: "sk_2").cached == false)
        #expect(cache.count == 1)
    }

    @Test func theCacheStaysWithinItsCapacity() {
        let cache = VerifiedKeyCache(capacity: 8)
        for index in 0..<100 { cache.remember("sk_\(index)", digest: AppRegistry.digest("sk_\(index)")) }
        #expect(cache.count <= 8)
        #expect(cache.count > 0)
    }
}
