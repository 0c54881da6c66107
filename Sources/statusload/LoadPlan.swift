/// Everything a run is asked to do, from the command line.
struct LoadPlan: Sendable {
    var urls: [String]
    var adminKey: String
    var appId: String
    var users: Int
    var devices: Int
    var subscriptions: Int
    var friends: Int
    var friendNotify: Bool
    var multiDeviceSync: Bool
    var rates: [Double]
    var duration: Double
    var drain: Double
    var stopP99Ms: Double?
    var viaHTTP: Bool
    var changesOnNode: Int?
    var churn: Double
    var idle: Bool
    var connectConcurrency: Int
    var connectTimeout: Double
    var setupConcurrency: Int
    var pids: [Int32]
    var seed: UInt64
    var keepApp: Bool

    var mode: String {
        if idle { return "idle" }
        if churn > 0 && rates.isEmpty { return "churn" }
        return churn > 0 ? "fanout+churn" : "fanout"
    }

    /// The WebSocket connect URL of each node: `http://host:port` → `ws://host:port/v1/connect`.
    var connectURLs: [String] {
        urls.map { url in
            var base = url.hasSuffix("/") ? String(url.dropLast()) : url
            if base.hasPrefix("https://") {
                base = "wss://" + base.dropFirst("https://".count)
            } else if base.hasPrefix("http://") {
                base = "ws://" + base.dropFirst("http://".count)
            }
            return base + "/v1/connect"
        }
    }
}
