import Foundation

/// How a ``StatusDevice`` connects and behaves; the defaults are those of the browser client `statusd.js`.
public struct StatusDeviceConfiguration: Sendable {
    /// The server's base URL (`http`, `https`, `ws` or `wss`); the device connects to `/v1/connect` under it.
    public var serverURL: URL
    public var deviceId: String
    public var platform: Platform
    /// `subscriptions` (the server's default when nil), `friends`, `all` or `roles:a,b` (SPEC §7).
    public var presence: String?
    /// Ask for a snapshot after every welcome (SPEC §10.6), so that a reconnect shows current statuses.
    public var snapshot = true
    /// Reconnect after a lost or refused connection (never after a kick or a logout).
    public var reconnect = true
    public var minReconnectDelay: Duration = .milliseconds(500)
    public var maxReconnectDelay: Duration = .seconds(30)
    /// How long a request waits for its reply; the heartbeat's timeout closes the connection.
    public var requestTimeout: Duration = .seconds(10)
    /// The heartbeat interval; nil uses the welcome's `heartbeatSeconds`, which the server keeps below the app's
    /// `heartbeatTimeoutSeconds`.
    public var heartbeatInterval: Duration?
    /// The events kept for a consumer that has not read them yet. Past it the oldest is dropped and the device
    /// reconnects, so that the snapshot it then receives replaces whatever the consumer missed.
    public var eventBufferSize = 256
    /// The largest frame accepted from the server.
    public var maxFrameSize = 1 << 20

    public init(serverURL: URL, deviceId: String, platform: Platform, presence: String? = nil) {
        self.serverURL = serverURL
        self.deviceId = deviceId
        self.platform = platform
        self.presence = presence
    }

    /// `ws(s)://host/v1/connect?deviceId=…&platform=…[&presence=…][&resume=…][&snapshot=true]`; the token goes in the
    /// Authorization header, not in the URL.
    func connectURL(resume: String?) -> String {
        var components = URLComponents(url: serverURL, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.scheme = components.scheme == "https" || components.scheme == "wss" ? "wss" : "ws"
        let base = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = base + "/v1/connect"
        var query = [URLQueryItem(name: "deviceId", value: deviceId), URLQueryItem(name: "platform", value: platform.rawValue)]
        if let presence { query.append(URLQueryItem(name: "presence", value: presence)) }
        if let resume { query.append(URLQueryItem(name: "resume", value: resume)) }
        if snapshot { query.append(URLQueryItem(name: "snapshot", value: "true")) }
        components.queryItems = query
        return components.string ?? ""
    }
}
