import Crypto

/// A Lua script with its SHA1 (computed locally with swift-crypto's Insecure.SHA1, lowercase hex).
///
/// Run it with ``RedisClient/evalScript(_:keys:arguments:acrossSlots:)``, which uses `EVALSHA`; on `NOSCRIPT` it loads the script and
/// sends that call as `EVAL`.
public struct RedisScript: Sendable, Hashable {
    /// A name for logs and errors.
    public let name: String
    /// The Lua source.
    public let source: String
    /// The SHA1 of `source`, as lowercase hex: the name Redis knows the script by.
    public let sha1: String

    /// Creates a script and computes its SHA1.
    public init(name: String, source: String) {
        self.name = name
        self.source = source
        let digest = Insecure.SHA1.hash(data: Array(source.utf8))
        let hexDigits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(40)
        for byte in digest {
            hex.append(hexDigits[Int(byte >> 4)])
            hex.append(hexDigits[Int(byte & 0x0f)])
        }
        self.sha1 = String(decoding: hex, as: UTF8.self)
    }
}
