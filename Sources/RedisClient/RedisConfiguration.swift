/// Where and how to connect.
public struct RedisConfiguration: Sendable {
    /// The address of a Redis server.
    public enum Endpoint: Sendable, Hashable {
        /// A TCP host name or IP address and port.
        case tcp(host: String, port: Int)
        /// A unix domain socket path.
        case unixSocket(path: String)
    }

    /// The server to connect to.
    public var endpoint: Endpoint
    /// Sent with `AUTH` after connecting, when set.
    public var password: String?
    /// Selected with `SELECT` after connecting, when not 0.
    public var database: Int
    /// The number of pooled command connections (default 4).
    public var poolSize: Int
    /// How long a command may wait for its reply before it fails with `.timeout` (default 1.5 s).
    ///
    /// Replies arrive in order, so a command that times out means every command behind it is stuck too: the connection
    /// is aborted (its unsent commands dropped) and reopened by the next call. A silent network path is found this way,
    /// by a deadline, not by TCP, which would wait minutes: together with ``connectTimeout`` it bounds how long a call
    /// can wait for an unreachable Redis. Do not use blocking commands that wait longer than this.
    public var commandTimeout: Duration
    /// How long establishing a TCP or unix socket connection may take (default 1 s).
    public var connectTimeout: Duration
    /// The maximum number of commands in flight on one connection (default 100,000); past it calls fail with `.tooManyPending`.
    public var maxPendingPerConnection: Int
    /// Given to every connection with `CLIENT SETNAME` when set (no spaces or newlines: Redis refuses them), so that
    /// `CLIENT LIST` shows whose each connection is, and `CLIENT KILL` can pick one process's connections.
    public var clientName: String?

    /// Creates a configuration with default pool size and timeouts.
    public init(endpoint: Endpoint, password: String? = nil, database: Int = 0) {
        self.endpoint = endpoint
        self.password = password
        self.database = database
        self.poolSize = 4
        self.commandTimeout = .milliseconds(1500)
        self.connectTimeout = .seconds(1)
        self.maxPendingPerConnection = 100_000
        self.clientName = nil
    }

    /// The commands that prepare a new connection, in order: `AUTH` and `CLIENT SETNAME` when configured, then, for a
    /// command connection (`selecting`), `SELECT` when the database is not 0 (subscriptions ignore databases).
    func setupCommands(selecting: Bool) -> [[String]] {
        var commands: [[String]] = []
        if let password { commands.append(["AUTH", password]) }
        if let clientName { commands.append(["CLIENT", "SETNAME", clientName]) }
        if selecting, database != 0 { commands.append(["SELECT", String(database)]) }
        return commands
    }

    /// Parses `redis://[:password@]host[:port][/db]` and `unix:///path/to.sock` (also `redis+unix:///path`).
    ///
    /// The password may be percent-encoded; a user name before the `:` is ignored. A unix socket URL may carry `?db=N`
    /// and `&password=...` query items. IPv6 hosts are written in brackets: `redis://[::1]:6379`.
    public init(url: String) throws {
        let lowered = url.lowercased()
        if lowered.hasPrefix("unix://") || lowered.hasPrefix("redis+unix://") {
            try self.init(unixURL: url, rest: url[url.index(after: url.firstIndex(of: ":")!)...].dropFirst(2))
        } else if lowered.hasPrefix("redis://") {
            try self.init(tcpURL: url, rest: url.dropFirst("redis://".count))
        } else {
            throw RedisURLError(url: url, reason: "the scheme must be redis://, unix:// or redis+unix://")
        }
    }

    private init(unixURL url: String, rest: Substring) throws {
        var path = rest
        var query: Substring = ""
        if let questionMark = rest.firstIndex(of: "?") {
            path = rest[..<questionMark]
            query = rest[rest.index(after: questionMark)...]
        }
        guard path.hasPrefix("/"), path.count > 1 else {
            throw RedisURLError(url: url, reason: "a unix socket URL needs an absolute path, e.g. unix:///run/redis.sock")
        }
        self.init(endpoint: .unixSocket(path: try Self.percentDecoded(path, url: url)))
        for item in query.split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let value = parts.count > 1 ? try Self.percentDecoded(parts[1], url: url) : ""
            switch parts[0] {
            case "db":
                guard let database = Int(value), database >= 0 else {
                    throw RedisURLError(url: url, reason: "db must be a non-negative integer")
                }
                self.database = database
            case "password":
                self.password = value
            default:
                continue
            }
        }
    }

    private init(tcpURL url: String, rest: Substring) throws {
        var authority = rest
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            let path = rest[rest.index(after: slash)...]
            if !path.isEmpty {
                guard let value = Int(path), value >= 0 else {
                    throw RedisURLError(url: url, reason: "the path must be a database number")
                }
                database = value
            }
        }
        var password: String?
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                password = try Self.percentDecoded(userInfo[userInfo.index(after: colon)...], url: url)
            } else if !userInfo.isEmpty {
                password = try Self.percentDecoded(userInfo, url: url)
            }
        }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw RedisURLError(url: url, reason: "unterminated IPv6 address")
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                portText = after.dropFirst()
            } else if !after.isEmpty {
                throw RedisURLError(url: url, reason: "unexpected text after the IPv6 address")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        var port = 6379
        if let portText {
            guard let value = Int(portText), (1...65_535).contains(value) else {
                throw RedisURLError(url: url, reason: "the port must be a number from 1 to 65535")
            }
            port = value
        }
        if host.isEmpty {
            host = "localhost"
        }
        self.init(endpoint: .tcp(host: String(host), port: port), password: password, database: database)
    }

    private static func percentDecoded(_ text: Substring, url: String) throws -> String {
        guard text.contains("%") else {
            return String(text)
        }
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) else {
                    throw RedisURLError(url: url, reason: "bad percent-encoding")
                }
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Thrown by ``RedisConfiguration/init(url:)`` for a URL it cannot parse.
public struct RedisURLError: Error, Sendable, CustomStringConvertible {
    /// The URL as given.
    public let url: String
    /// What is wrong with it.
    public let reason: String

    /// A message naming the URL's scheme and the problem (the URL itself is not repeated, as it may hold a password).
    public var description: String {
        "invalid Redis URL: \(self.reason)"
    }
}
