import Crypto
import Foundation

/// The `X-Statusd-Signature` header of SPEC §8: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
enum WebhookSigner {
    /// The header's name.
    static let headerName = "X-Statusd-Signature"

    /// The header value for `body` signed with `secret` at `timestamp` (unix seconds).
    static func signature(body: String, secret: String, timestamp: Int64) -> String {
        "t=\(timestamp),v1=\(mac(body: body, secret: secret, timestamp: timestamp))"
    }

    /// The hex HMAC-SHA256 of `"<timestamp>.<body>"` under `secret`.
    static func mac(body: String, secret: String, timestamp: Int64) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data("\(timestamp).\(body)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return code.map { String(format: "%02x", $0) }.joined()
    }
}
