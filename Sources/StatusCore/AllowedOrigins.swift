/// The browser origins an app accepts WebSocket upgrades from (the `allowedOrigins` config flag).
///
/// Browsers send `Origin` on every WebSocket upgrade and let any page open a socket to any host, so without this list
/// a page on another site could connect with a token it got hold of. An absent list (`null`) accepts every origin, as
/// statusd always did; a request without a browser's `Origin` header (a native app, a backend) is never refused by it,
/// since only browsers are held to their page's origin and anything else could send whatever header it liked.
public enum AllowedOrigins {
    /// The most origins one app may list.
    public static let maxCount = 100
    /// The longest origin accepted in the list.
    public static let maxLength = 255

    /// The origin in the form browsers send it: `scheme://host[:port]`, lowercased, without a trailing slash.
    /// Returns nil for anything that is not an `http` or `https` origin without path, query or credentials. Hosts are
    /// ASCII (browsers send internationalized names in punycode), IPv6 literals in brackets, ports 1–65535 without
    /// leading zeros.
    public static func normalized(_ origin: String) -> String? {
        guard origin.utf8.count <= maxLength, origin.allSatisfy(\.isASCII) else { return nil }
        var text = origin.lowercased()
        if text.hasSuffix("/") { text.removeLast() }
        let scheme: String
        if text.hasPrefix("https://") {
            scheme = "https://"
        } else if text.hasPrefix("http://") {
            scheme = "http://"
        } else {
            return nil
        }
        let authority = text.dropFirst(scheme.count)
        let host: Substring
        let rest: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[...close]
            rest = authority[authority.index(after: close)...]
            guard host.count > 2, host.dropFirst().dropLast().allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        } else {
            let colon = authority.firstIndex(of: ":") ?? authority.endIndex
            host = authority[..<colon]
            rest = authority[colon...]
            guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }) else { return nil }
        }
        if !rest.isEmpty {
            let digits = rest.dropFirst()
            guard rest.first == ":", let first = digits.first, first != "0", digits.count <= 5, digits.allSatisfy(\.isNumber),
                let port = Int(digits), port <= 65_535
            else { return nil }
        }
        return text
    }

    /// Whether an upgrade carrying `origins` (its `Origin` headers) may connect under `allowed`.
    ///
    /// `ws://` and `wss://` values are not browser origins (browsers send the page's `http(s)` origin, or `null`): some
    /// WebSocket libraries send the socket's own address there, and such a client is not held to the list. Every other
    /// value, `null` included, must be listed.
    public static func admits(_ origins: [String], allowed: [String]?) -> Bool {
        guard let allowed else { return true }
        let browserOrigins = origins.filter { value in
            let lowered = value.lowercased()
            return !(lowered.hasPrefix("ws://") || lowered.hasPrefix("wss://"))
        }
        return browserOrigins.allSatisfy { origin in normalized(origin).map(allowed.contains) ?? false }
    }
}
