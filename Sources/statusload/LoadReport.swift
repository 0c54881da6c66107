import Foundation

/// The results of a run: printed as a table and as one JSON line (`SUMMARY {...}` or `--json FILE`).
struct LoadReport: Codable, Sendable {
    /// One target rate held for the step's duration.
    struct Step: Codable, Sendable {
        var via: String
        var targetRate: Double
        var seconds: Double
        var changesSent: Int
        var changesFailed: Int
        var changesSkipped: Int
        var changesPerSecond: Double
        var eventsExpected: Int
        var eventsReceived: Int
        var eventsLost: Int
        var deliveriesPerSecond: Double
        var latencyMs: LatencySummary
        var perNode: [NodeFigures]
        /// statusload's own CPU seconds (user + system) from the step's start to the end of its drain.
        var loadCpuSeconds: Double
        /// The statusd nodes' CPU seconds (sum over `--pid`) over the same span; nil without `--pid`.
        var serverCpuSeconds: Double?
        /// The same, for each `--pid` in order (the CPU each node spent).
        var serverCpuSecondsPerPid: [Double]?
        /// loadCpuSeconds ÷ events received, in µs: what counting one delivery costs the loader.
        var loadMicrosPerDelivery: Double?
        /// serverCpuSeconds ÷ events received, in µs.
        var serverMicrosPerDelivery: Double?
        /// The nodes' RSS at the end of the step.
        var rssBytes: UInt64?
    }

    /// What devices on one node received during a step.
    struct NodeFigures: Codable, Sendable {
        var node: Int
        var eventsExpected: Int
        var eventsReceived: Int
        var latencyMs: LatencySummary
    }

    /// The connect phase.
    struct Connections: Codable, Sendable {
        var target: Int
        var established: Int
        var failed: Int
        var seconds: Double
        var perSecond: Double
        var connectTimeMs: LatencySummary
        var droppedDuringRun: Int
    }

    /// The churn phase.
    struct Churn: Codable, Sendable {
        var targetRate: Double
        var seconds: Double
        var dropsRequested: Int
        var reconnects: Int
        var failures: Int
        var connectsPerSecond: Double
        /// The churn's reconnects only, from the start of each to its welcome (the initial connections are in
        /// ``Connections/connectTimeMs``).
        var connectTimeMs: LatencySummary
        /// Census after the churn (server API `GET /users?status=online` vs the loader's connected devices' users).
        var census: Census?
    }

    /// Users the server lists as online against users the loader holds a connected device of.
    struct Census: Codable, Sendable {
        /// Users with a connected device, by the loader's count (after the churn, devices still held).
        var usersConnected: Int
        /// Users the server lists online at the same moment.
        var onlineListed: Int
        /// Listed online without a connected device.
        var ghostOnline: Int
        /// Connected but not listed.
        var missingOnline: Int
        /// Users still listed online a few seconds after every device closed (should be 0).
        var onlineAfterClose: Int?
        /// How long after the first count the server's and the loader's counts agreed; nil when they still differed
        /// after `LoadRun.censusSettleSeconds` (the counts above are then the last ones read).
        var agreedAfterMs: Int?
    }

    /// What `--failover` saw: how connections were lost, the reconnects, and what watchers were shown meanwhile.
    struct Failover: Codable, Sendable {
        /// Connections the server closed with 1012 (drain), with 1013, and that ended without a close frame.
        var closed1012: Int
        var closed1013: Int
        var closedWithoutFrame: Int
        /// Reconnects that reached their welcome, and attempts that did not (refused, not upgraded, or closed).
        var reconnects: Int
        var reconnectAttemptsFailed: Int
        /// The failed attempts by cause: the TCP connect timed out, was refused, found no local address (no ephemeral
        /// port left), failed otherwise; the connection closed before its welcome.
        var attemptsTimedOut: Int
        var attemptsRefused: Int
        var attemptsNoAddress: Int
        var attemptsOtherError: Int
        var attemptsClosedBeforeWelcome: Int
        /// Upgrades answered 429 (`connectRateLimit`), and with any other status than 101.
        var refused429: Int
        var refusedOther: Int
        /// From the loss of a connection to the welcome of its reconnect.
        var reconnectTimeMs: LatencySummary
        /// Watchers shown a watched user `offline`, then `online` again (while measuring), and the longest such gap.
        var flaps: Int
        var offlineShown: Int
        var flapMaxMs: Double
        /// The longest a watcher showed a stale status: the longest first receipt of a change's version (event,
        /// resume or snapshot) and the longest offline→online gap, ms.
        var staleMaxMs: Double
        /// At the end (changes stopped, drained), (connected watcher, watched user) pairs compared with the server's
        /// view (`POST /status/query`), those whose last version seen is behind it, and those still shown offline.
        var pairsChecked: Int?
        var pairsBehind: Int?
        var pairsShownOffline: Int?
        /// Pairs left out of the comparison: the watcher was never shown the user at all, not even by its first
        /// connect's snapshot, so it never held the subscription (a sliced run's processes provision their users
        /// concurrently: one may subscribe to a user another has not created yet).
        var pairsNeverShown: Int?
    }

    /// The statusd processes' resident memory.
    struct Memory: Codable, Sendable {
        var pids: [Int32]
        var beforeBytes: UInt64?
        var connectedBytes: UInt64?
        var afterBytes: UInt64?
        var perDeviceBytes: Double?
    }

    var date: String
    var mode: String
    var urls: [String]
    var appId: String
    var users: Int
    var devices: Int
    var subscriptionsPerUser: Int
    var friendsPerUser: Int
    var friendStatusNotify: Bool
    var multiDeviceSync: Bool
    var setupSeconds: Double
    var connections: Connections
    var steps: [Step]
    var churn: Churn?
    var failover: Failover?
    var memory: Memory

    func printTable() {
        Console.line("")
        Console.line(
            "statusload \(mode) — \(users) users, \(devices) devices on \(urls.count) node(s), \(subscriptionsPerUser) subscriptions/user, "
                + "\(friendsPerUser) friends/user\(friendStatusNotify ? " (notified)" : ""), multiDeviceSync \(multiDeviceSync ? "on" : "off")"
        )
        let connect = connections
        Console.line(
            String(
                format:
                    "connections: %d/%d established, %d failed in %.1f s (%.0f/s); connect time p50 %.1f ms, p99 %.1f ms; %d dropped by the server",
                connect.established,
                connect.target,
                connect.failed,
                connect.seconds,
                connect.perSecond,
                connect.connectTimeMs.p50,
                connect.connectTimeMs.p99,
                connect.droppedDuringRun
            )
        )
        if !steps.isEmpty {
            Console.line("")
            Console.line(
                "| via  | target/s | sent/s | sent  | failed | expected | received | lost | deliveries/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms "
                    + "| server µs/dlv | load µs/dlv |"
            )
            Console.line(
                "|------|---------:|-------:|------:|-------:|---------:|---------:|-----:|-------------:|-------:|-------:|-------:|---------:|-------:"
                    + "|--------------:|------------:|"
            )
            for step in steps {
                let latency = step.latencyMs
                Console.line(
                    "| \(step.via.padding(toLength: 4, withPad: " ", startingAt: 0)) "
                        + String(
                            format: "| %8.0f | %6.1f | %5d | %6d | %8d | %8d | %4d | %12.0f | %6.2f | %6.2f | %6.2f | %8.2f | %6.2f |",
                            step.targetRate,
                            step.changesPerSecond,
                            step.changesSent,
                            step.changesFailed,
                            step.eventsExpected,
                            step.eventsReceived,
                            step.eventsLost,
                            step.deliveriesPerSecond,
                            latency.p50,
                            latency.p90,
                            latency.p99,
                            latency.p999,
                            latency.max
                        ) + " \(Self.micros(step.serverMicrosPerDelivery, width: 13)) | \(Self.micros(step.loadMicrosPerDelivery, width: 11)) |"
                )
            }
            if urls.count > 1 {
                for step in steps {
                    for node in step.perNode {
                        Console.line(
                            String(
                                format: "  rate %.0f/s, devices on node %d: %d/%d events, p50 %.2f ms, p99 %.2f ms",
                                step.targetRate,
                                node.node,
                                node.eventsReceived,
                                node.eventsExpected,
                                node.latencyMs.p50,
                                node.latencyMs.p99
                            )
                        )
                    }
                }
            }
        }
        if let churn {
            Console.line(
                String(
                    format:
                        "churn: %d drops requested (target %.0f/s), %d reconnects (%.1f connects/s), %d failed; connect time p50 %.1f ms, p99 %.1f ms",
                    churn.dropsRequested,
                    churn.targetRate,
                    churn.reconnects,
                    churn.connectsPerSecond,
                    churn.failures,
                    churn.connectTimeMs.p50,
                    churn.connectTimeMs.p99
                )
            )
            if let census = churn.census {
                Console.line(
                    "online census after the churn: \(census.onlineListed) users listed online, \(census.usersConnected) with a device connected: "
                        + "\(census.ghostOnline) ghost(s), \(census.missingOnline) missing"
                        + (census.agreedAfterMs.map { " (the counts agreed \($0) ms after the first read)" } ?? "")
                        + (census.onlineAfterClose.map { "; \($0) still listed online after every device closed" } ?? "")
                )
            }
        }
        if let failover {
            Console.line(
                String(
                    format:
                        "failover: closed 1012 %d, 1013 %d, without close frame %d; %d reconnects (p50 %.1f ms, p99 %.1f ms, max %.1f ms), "
                        + "%d attempts failed (%d timed out, %d refused, %d without a local address, %d other errors, "
                        + "%d closed before the welcome), %d refused 429, %d refused otherwise",
                    failover.closed1012,
                    failover.closed1013,
                    failover.closedWithoutFrame,
                    failover.reconnects,
                    failover.reconnectTimeMs.p50,
                    failover.reconnectTimeMs.p99,
                    failover.reconnectTimeMs.max,
                    failover.reconnectAttemptsFailed,
                    failover.attemptsTimedOut,
                    failover.attemptsRefused,
                    failover.attemptsNoAddress,
                    failover.attemptsOtherError,
                    failover.attemptsClosedBeforeWelcome,
                    failover.refused429,
                    failover.refusedOther
                )
            )
            Console.line(
                String(
                    format: "watchers: %d offline→online flaps (longest %.0f ms), %d offline shown; longest stale status %.0f ms",
                    failover.flaps,
                    failover.flapMaxMs,
                    failover.offlineShown,
                    failover.staleMaxMs
                )
                    + (failover.pairsChecked.map {
                        "; at the end \(failover.pairsBehind ?? 0) of \($0) watched pairs behind the server, "
                            + "\(failover.pairsShownOffline ?? 0) shown offline, \(failover.pairsNeverShown ?? 0) never shown (not compared)"
                    } ?? "")
            )
        }
        if let before = memory.beforeBytes {
            var line = "statusd RSS (pid \(memory.pids.map(String.init).joined(separator: "+"))): before " + Self.mib(before)
            if let connected = memory.connectedBytes { line += ", all connected " + Self.mib(connected) }
            if let after = memory.afterBytes { line += ", at the end " + Self.mib(after) }
            if let perDevice = memory.perDeviceBytes { line += String(format: "; %.1f KiB per device", perDevice / 1024) }
            Console.line(line)
        }
    }

    func jsonLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: encoder.encode(self), as: UTF8.self)) ?? "{}"
    }

    /// A µs figure right-aligned in `width` columns, `-` when unknown.
    static func micros(_ value: Double?, width: Int) -> String {
        let text = value.map { String(format: "%.2f", $0) } ?? "-"
        return String(repeating: " ", count: max(width - text.count, 0)) + text
    }

    static func mib(_ bytes: UInt64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
}
