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
    var existingAPIKey: String?
    var slice: DeviceSlice
    var holdUntilFile: String?
    var threads: Int
    var stopOnLoss: Bool
    var readBatchMs: Double
    /// Every connect asks for a snapshot (SPEC §10.6).
    var snapshot = false
    /// The app's `offlineGraceSeconds` (SPEC §10.3).
    var offlineGraceSeconds = 0
    /// `--failover`: devices the server closes (1012/1013) or whose node goes away reconnect to the next node, with
    /// this jitter bound in ms; `nil` without failover.
    var failoverJitterMs: Double?
    /// Devices start on the first `initialNodes` URLs only (nil: all).
    var initialNodes: Int?
    /// After the connect phase, the steps wait for this file to exist (at most `connectTimeout`).
    var startFile: String?
    /// Each failover reconnect's time from loss to welcome, ms, one a line.
    var reconnectTimesFile: String?

    /// The devices this process runs.
    var localDevices: [Int] { Array(stride(from: slice.index, to: devices, by: slice.count)) }

    /// The users of this process's devices (every user when the process runs all devices).
    var localUsers: [Int] {
        guard slice.count > 1 else { return Array(0..<users) }
        return Set(localDevices.map { $0 % users }).sorted()
    }

    var mode: String {
        if idle { return "idle" }
        if churn > 0 && rates.isEmpty { return "churn" }
        return churn > 0 ? "fanout+churn" : "fanout"
    }
}
