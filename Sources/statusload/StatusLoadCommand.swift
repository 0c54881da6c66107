import ArgumentParser
import Foundation

/// `statusload`: simulates an app's users and devices against running statusd nodes on loopback and measures event
/// delivery (rate, loss, end-to-end latency), connection capacity, churn and the nodes' memory.
@main
struct StatusLoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "statusload",
        abstract: "Load generator for statusd: users, subscriptions, WebSocket devices, status changes, latency and memory."
    )

    @Option(name: .customLong("url"), help: "statusd base URL; repeat for several nodes (devices are split round-robin).")
    var urls: [String] = ["http://127.0.0.1:8080"]

    @Option(help: "Admin key of statusd (env STATUSD_ADMIN_KEY).")
    var adminKey: String?

    @Option(help: "App id to create (default: load-<time>).")
    var app: String?

    @Option(help: "Number of users.")
    var users: Int = 1000

    @Option(help: "Number of devices (default: one per user; device i belongs to user i mod users).")
    var devices: Int?

    @Option(help: "Subscriptions per user, chosen deterministically from --seed.")
    var subscriptions: Int = 20

    @Option(help: "Friends per user (ring neighbours, even numbers).")
    var friends: Int = 0

    @Flag(help: "Turn on friendStatusNotify (friends receive each other's changes).")
    var friendNotify = false

    @Flag(inversion: .prefixedNo, help: "multiDeviceSync of the app (a user's own devices receive their changes).")
    var multiDeviceSync = true

    @Option(help: "Target change rates per second, comma separated: one step per rate (e.g. 50,100,200,400); 0 = no changes.")
    var rate: String = "50"

    @Option(help: "Seconds each step (or the idle hold / churn) lasts.")
    var duration: Double = 10

    @Option(help: "Seconds to wait after a step for events still in flight.")
    var drain: Double = 3

    @Option(help: "Stop stepping up the rate after a step whose p99 latency exceeds this many ms.")
    var stopP99Ms: Double?

    @Option(help: "How changes are made: ws (setSelfStatus on the device's WebSocket) or http (PUT .../status).")
    var via: String = "ws"

    @Option(help: "Make changes only from devices on this node (index into --url); default any node.")
    var changesOnNode: Int?

    @Option(help: "Connect/disconnect cycles per second during the run (devices drop and reconnect).")
    var churn: Double = 0

    @Flag(help: "Only connect the devices and hold them for --duration (memory figure); no changes.")
    var idle = false

    @Option(help: "Connection attempts in flight during the connect phase.")
    var connectConcurrency: Int = 100

    @Option(help: "Seconds allowed for the connect phase; the run goes on with whatever connected.")
    var connectTimeout: Double = 180

    @Option(help: "HTTP calls in flight during set-up.")
    var setupConcurrency: Int = 32

    @Option(name: .customLong("pid"), help: "pid of a statusd node, for its RSS (VmRSS); repeat for several.")
    var pids: [Int32] = []

    @Option(help: "Write the JSON summary to this file (it is also printed after 'SUMMARY ').")
    var json: String?

    @Option(help: "Seed of the subscription graph and of the choice of devices.")
    var seed: UInt64 = 1

    @Flag(help: "Keep the app (default: delete it at the end).")
    var keepApp = false

    @Option(help: "API key of an existing app --app: use it instead of creating one (it is then never deleted).")
    var apiKey: String?

    @Option(
        help: "Run only devices d with d mod N = K (K/N), so several processes share one app's devices (with --api-key); --idle or --rate 0 only."
    )
    var deviceSlice: String?

    @Option(help: "End the idle hold, or the step, as soon as this file exists (--duration stays the longest).")
    var holdUntilFile: String?

    @Option(help: "Event loops for the devices' connections (default 1: one loop counts 100k+ deliveries/s; more loops add wake-ups).")
    var threads: Int = 1

    @Option(help: "Milliseconds each event loop pauses between two passes over its ready sockets (batches reads; 0 = off).")
    var readBatchMs: Double = 1

    @Flag(help: "Stop stepping up the rate after a step that lost events.")
    var stopOnLoss = false

    @Flag(help: "Every connect asks for a snapshot (&snapshot=true) of what the device may see.")
    var snapshot = false

    @Option(help: "offlineGraceSeconds of the app the loader creates (0-300).")
    var offlineGraceSeconds = 0

    @Flag(
        help: """
            A device closed by its server with 1012 or 1013, or whose connection ends without a close frame (its node \
            went away), reconnects to the next --url after a random jitter, presenting its resume token (a failed \
            attempt tries the next one); reconnects, their time from loss to welcome, refusals and, for watchers, \
            offline→online flaps, the longest stale status and (at the end) versions behind the server's are reported.
            """
    )
    var failover = false

    @Option(help: "With --failover: the upper bound of the random wait before a reconnect, ms.")
    var reconnectJitterMs: Double = 200

    @Option(help: "Devices start on the first N --url only (the others take failed-over devices); default all.")
    var initialNodes: Int?

    @Option(help: "After connecting, wait (at most --connect-timeout) for this file to exist before the steps begin.")
    var startFile: String?

    @Option(help: "With --failover: write each reconnect's time from loss to welcome (ms), one a line, to this file.")
    var reconnectTimes: String?

    func validate() throws {
        guard users >= 1 else { throw ValidationError("--users must be at least 1") }
        guard (devices ?? users) >= 1 else { throw ValidationError("--devices must be at least 1") }
        guard via == "ws" || via == "http" else { throw ValidationError("--via is ws or http") }
        guard !urls.isEmpty else { throw ValidationError("--url is required") }
        guard rates != nil else { throw ValidationError("--rate is a comma separated list of numbers") }
        if let changesOnNode, changesOnNode < 0 || changesOnNode >= urls.count {
            throw ValidationError("--changes-on-node must index --url")
        }
        guard let slice = DeviceSlice(deviceSlice) else { throw ValidationError("--device-slice is K/N with 0 <= K < N") }
        if slice.count > 1 {
            guard idle || (rates ?? []).isEmpty || failover else {
                throw ValidationError("--device-slice runs only with --idle, --rate 0 (churn) or --failover")
            }
            guard app != nil, apiKey != nil else { throw ValidationError("--device-slice needs --app and --api-key (one shared app)") }
        }
        if apiKey != nil && app == nil { throw ValidationError("--api-key needs --app") }
        if threads < 1 { throw ValidationError("--threads must be at least 1") }
        if let initialNodes, initialNodes < 1 || initialNodes > urls.count {
            throw ValidationError("--initial-nodes must be between 1 and the number of --url")
        }
    }

    var rates: [Double]? {
        let parts = rate.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        return parts.contains(nil) ? nil : parts.compactMap { $0 }.filter { $0 > 0 }
    }

    func run() async throws {
        guard let adminKey = adminKey ?? ProcessInfo.processInfo.environment["STATUSD_ADMIN_KEY"] else {
            throw ValidationError("--admin-key (or STATUSD_ADMIN_KEY) is required")
        }
        let plan = LoadPlan(
            urls: urls,
            adminKey: adminKey,
            appId: app ?? "load-\(MonotonicClock.epochMs())",
            users: users,
            devices: devices ?? users,
            subscriptions: idle ? 0 : subscriptions,
            friends: idle ? 0 : friends,
            friendNotify: friendNotify,
            multiDeviceSync: multiDeviceSync,
            rates: idle ? [] : rates ?? [],
            duration: duration,
            drain: drain,
            stopP99Ms: stopP99Ms,
            viaHTTP: via == "http",
            changesOnNode: changesOnNode,
            churn: idle ? 0 : churn,
            idle: idle,
            connectConcurrency: connectConcurrency,
            connectTimeout: connectTimeout,
            setupConcurrency: setupConcurrency,
            pids: pids,
            seed: seed,
            keepApp: keepApp || apiKey != nil,
            existingAPIKey: apiKey,
            slice: DeviceSlice(deviceSlice) ?? DeviceSlice(index: 0, count: 1),
            holdUntilFile: holdUntilFile,
            threads: threads,
            stopOnLoss: stopOnLoss,
            readBatchMs: readBatchMs,
            snapshot: snapshot,
            offlineGraceSeconds: offlineGraceSeconds,
            failoverJitterMs: failover ? max(reconnectJitterMs, 0) : nil,
            initialNodes: initialNodes,
            startFile: startFile,
            reconnectTimesFile: reconnectTimes
        )
        let report = try await LoadRun(plan: plan).run()
        let line = report.jsonLine()
        if let json { try (line + "\n").write(toFile: json, atomically: true, encoding: .utf8) }
        Console.line("SUMMARY " + line)
    }
}
