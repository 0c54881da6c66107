import Foundation
import NIOCore
import NIOPosix
import StatusdClient

/// One run of the load generator: set-up over HTTP, the connect phase (bounded concurrency and time), then the steps
/// (target change rates, with optional churn) or the idle hold, the report, and the teardown.
struct LoadRun: Sendable {
    let plan: LoadPlan

    /// How long the census after a churn waits for the server's count of online users to agree with the loader's.
    static let censusSettleSeconds = 10

    func run() async throws -> LoadReport {
        let client = try SetupClient(baseURL: plan.urls[0], adminKey: plan.adminKey, maxConnections: max(plan.setupConcurrency, 8))
        do {
            let report = try await run(client: client)
            try await client.shutdown()
            return report
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    private func run(client: SetupClient) async throws -> LoadReport {
        let plan = plan
        let graph = SocialGraph(
            userCount: plan.users,
            subscriptionsPerUser: plan.subscriptions,
            friendsPerUser: plan.friends,
            friendNotify: plan.friendNotify,
            seed: plan.seed
        )
        let endpoints = try plan.urls.map { try DeviceConnector.Endpoint(url: $0, snapshot: plan.snapshot) }
        let setupStart = ContinuousClock.now
        let app = try await AppProvisioner(client: client, graph: graph, concurrency: plan.setupConcurrency).provision(
            appId: plan.appId,
            config: AppProvisioner.config(
                subscriptionsPerUser: plan.subscriptions,
                friendNotify: plan.friendNotify,
                multiDeviceSync: plan.multiDeviceSync,
                offlineGraceSeconds: plan.offlineGraceSeconds,
                reconnects: plan.churn > 0
            ),
            existingAPIKey: plan.existingAPIKey,
            users: plan.localUsers
        )
        let setupSeconds = Self.seconds(since: setupStart)
        Self.armWatchdog(plan)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: plan.threads)
        let loops = Array(group.makeIterator())
        let registry = DeviceRegistry(
            deviceCount: plan.devices,
            nodeCount: plan.urls.count,
            graph: graph,
            multiDeviceSync: plan.multiDeviceSync,
            initialNodes: plan.initialNodes
        )
        let stats = LoadStats(loops: loops, nodeCount: plan.urls.count)
        let pacer = ReadPacer(pauseMilliseconds: plan.readBatchMs)
        pacer.start(on: stats.loops)
        // With --failover every device of this process keeps what it saw of the users it watches across reconnects.
        let watches: [DeviceWatch?] =
            plan.failoverJitterMs == nil
            ? []
            : (0..<plan.devices).map { device in
                device % plan.slice.count == plan.slice.index ? DeviceWatch(targets: graph.subscriptions[device % plan.users]) : nil
            }
        let connector = DeviceConnector(
            loops: loops,
            endpoints: endpoints,
            tokens: app.tokens,
            registry: registry,
            stats: stats,
            failover: plan.failoverJitterMs.map { DeviceConnector.Failover(jitterMs: $0) },
            watches: watches
        )
        let progress = ProgressReporter(registry: registry, stats: stats, pids: plan.pids)
        var memory = LoadReport.Memory(pids: plan.pids, beforeBytes: ProcessMemory.residentBytes(pids: plan.pids))
        let devices = plan.localDevices

        let report = await withDiscardingTaskGroup { tasks -> LoadReport in
            tasks.addTask { await progress.run() }
            // Connect phase: at most connectConcurrency first attempts in flight, within connectTimeout.
            progress.enter("connecting")
            let connectStart = ContinuousClock.now
            let connectDeadline = connectStart + .milliseconds(Int64(plan.connectTimeout * 1000))
            var launched = 0
            while launched < devices.count && ContinuousClock.now < connectDeadline {
                if registry.pendingFirstAttempts >= plan.connectConcurrency {
                    try? await Task.sleep(for: .milliseconds(2))
                    continue
                }
                registry.beginFirstAttempt()
                connector.start(device: devices[launched])
                launched += 1
            }
            while registry.pendingFirstAttempts > 0 && ContinuousClock.now < connectDeadline {
                try? await Task.sleep(for: .milliseconds(20))
            }
            let connectSeconds = Self.seconds(since: connectStart)
            let afterConnect = await stats.snapshot()
            // Let the connect storm's events settle before measuring.
            try? await Task.sleep(for: .seconds(1))
            memory.connectedBytes = ProcessMemory.residentBytes(pids: plan.pids)
            if let startFile = plan.startFile {
                progress.enter("waiting")
                await Self.hold(seconds: plan.connectTimeout, untilFile: startFile)
            }

            var steps: [LoadReport.Step] = []
            var churn: LoadReport.Churn?
            if plan.idle || (plan.rates.isEmpty && plan.churn == 0) {
                progress.enter("holding")
                await Self.hold(seconds: plan.duration, untilFile: plan.holdUntilFile)
            } else {
                let driver = ChangeDriver(
                    registry: registry,
                    stats: stats,
                    http: plan.viaHTTP ? ChangeDriver.HTTPChanges(app: client.app(app.appId, apiKey: app.apiKey)) : nil,
                    node: plan.changesOnNode
                )
                let churnDriver = ChurnDriver(registry: registry, stats: stats)
                let stepRates = plan.rates.isEmpty ? [0] : plan.rates
                let churnStart = await stats.snapshot(histograms: false)
                let churnClock = ContinuousClock.now
                for (index, rate) in stepRates.enumerated() {
                    progress.enter(rate > 0 ? "rate \(Int(rate))/s" : "churn")
                    await stats.beginStep()
                    let cpuStart = (
                        own: CPUTime.ownSeconds(), server: CPUTime.processSeconds(pids: plan.pids),
                        perServer: plan.pids.map { CPUTime.processSeconds(pid: $0) ?? 0 }
                    )
                    let stepStart = ContinuousClock.now
                    await withDiscardingTaskGroup { step in
                        step.addTask {
                            await driver.run(rate: rate, seconds: plan.duration, seed: plan.seed &+ UInt64(index), stopFile: plan.holdUntilFile)
                        }
                        step.addTask { await churnDriver.run(rate: plan.churn, seconds: plan.duration, seed: plan.seed &+ UInt64(index)) }
                    }
                    let sendSeconds = Self.seconds(since: stepStart)
                    progress.enter("draining")
                    let drainDeadline = ContinuousClock.now + .milliseconds(Int64(plan.drain * 1000))
                    while ContinuousClock.now < drainDeadline {
                        let now = await stats.snapshot(histograms: false)
                        // With --failover the drain is always whole: the processes of a run stay in step.
                        if plan.failoverJitterMs == nil && now.receivedTotal >= now.expectedTotal
                            && now.changesAcked + now.changesFailed >= now.changesSent
                        {
                            break
                        }
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                    let cpu = StepCPU(
                        own: CPUTime.ownSeconds() - cpuStart.own,
                        server: CPUTime.processSeconds(pids: plan.pids).flatMap { end in cpuStart.server.map { end - $0 } },
                        perServer: zip(plan.pids, cpuStart.perServer).map { (CPUTime.processSeconds(pid: $0) ?? 0) - $1 }
                    )
                    let result = await stats.snapshot()
                    if rate > 0 {
                        var step = Self.step(result, via: plan.viaHTTP ? "http" : "ws", rate: rate, seconds: sendSeconds, cpu: cpu)
                        step.rssBytes = ProcessMemory.residentBytes(pids: plan.pids)
                        steps.append(step)
                    }
                    if index < stepRates.count - 1, let last = steps.last {
                        if let limit = plan.stopP99Ms, last.latencyMs.p99 > limit {
                            Console.line(
                                String(format: "p99 %.2f ms > %.0f ms at %.0f changes/s: not stepping further", last.latencyMs.p99, limit, rate)
                            )
                            break
                        }
                        if plan.stopOnLoss, last.eventsLost > 0 {
                            Console.line(String(format: "%d events lost at %.0f changes/s: not stepping further", last.eventsLost, rate))
                            break
                        }
                    }
                }
                if plan.churn > 0 {
                    let end = await stats.snapshot()
                    let seconds = Self.seconds(since: churnClock)
                    churn = LoadReport.Churn(
                        targetRate: plan.churn,
                        seconds: seconds,
                        dropsRequested: end.churnRequested - churnStart.churnRequested,
                        reconnects: end.connects - churnStart.connects,
                        failures: end.connectFailures - churnStart.connectFailures,
                        connectsPerSecond: Double(end.connects - churnStart.connects) / max(seconds, 0.001),
                        connectTimeMs: LatencySummary(end.laterConnectTime)
                    )
                    if plan.slice.count == 1 {
                        // Reconnects still in flight settle first; then the server's view is compared with the loader's.
                        try? await Task.sleep(for: .seconds(max(plan.drain, 1)))
                        // A node that fell behind under the churn is still filing departures: the two counts are
                        // compared again until they agree, for at most `censusSettleSeconds`. What still differs then
                        // is state left wrong, not work queued.
                        let censusStart = ContinuousClock.now
                        while let listed = try? await client.countOnlineUsers(app: client.app(app.appId, apiKey: app.apiKey)) {
                            let connectedUsers = registry.connectedUserCount
                            let waited = ContinuousClock.now - censusStart
                            churn?.census = LoadReport.Census(
                                usersConnected: connectedUsers,
                                onlineListed: listed,
                                ghostOnline: max(listed - connectedUsers, 0),
                                missingOnline: max(connectedUsers - listed, 0),
                                agreedAfterMs: listed == connectedUsers ? Int(waited / .milliseconds(1)) : nil
                            )
                            if listed == connectedUsers || waited >= .seconds(Self.censusSettleSeconds) { break }
                            try? await Task.sleep(for: .milliseconds(500))
                        }
                    }
                }
            }
            var failover: LoadReport.Failover?
            if plan.failoverJitterMs != nil {
                failover = await Self.failover(
                    plan: plan,
                    stats: stats,
                    registry: registry,
                    watches: watches,
                    app: client.app(app.appId, apiKey: app.apiKey),
                    client: client
                )
            }
            memory.afterBytes = ProcessMemory.residentBytes(pids: plan.pids)
            if let before = memory.beforeBytes, let after = memory.connectedBytes, afterConnect.connects > 0 {
                memory.perDeviceBytes = (Double(after) - Double(before)) / Double(afterConnect.connects)
            }
            let final = await stats.snapshot(histograms: false)
            progress.stop()
            // Teardown: every device closes; whatever has not closed after 20 s is abandoned with the event loops.
            registry.stop()
            let closeDeadline = ContinuousClock.now + .seconds(20)
            while registry.activeAttempts > 0 && ContinuousClock.now < closeDeadline {
                try? await Task.sleep(for: .milliseconds(50))
            }
            if churn?.census != nil {
                try? await Task.sleep(for: .seconds(2))
                churn?.census?.onlineAfterClose = try? await client.countOnlineUsers(app: client.app(app.appId, apiKey: app.apiKey))
            }
            let report = LoadReport(
                date: ISO8601DateFormatter().string(from: Date()),
                mode: plan.mode,
                urls: plan.urls,
                appId: app.appId,
                users: plan.users,
                devices: devices.count,
                subscriptionsPerUser: plan.subscriptions,
                friendsPerUser: plan.friends,
                friendStatusNotify: plan.friendNotify,
                multiDeviceSync: plan.multiDeviceSync,
                setupSeconds: setupSeconds,
                connections: LoadReport.Connections(
                    target: devices.count,
                    established: afterConnect.connects,
                    failed: afterConnect.connectFailures + (devices.count - launched),
                    seconds: connectSeconds,
                    perSecond: Double(afterConnect.connects) / max(connectSeconds, 0.001),
                    connectTimeMs: LatencySummary(afterConnect.connectTime),
                    droppedDuringRun: final.drops
                ),
                steps: steps,
                churn: churn,
                failover: failover,
                memory: memory
            )
            report.printTable()
            return report
        }
        pacer.stop()
        try? await group.shutdownGracefully()
        if !plan.keepApp {
            try? await client.deleteApp(app.appId)
        }
        return report
    }

    /// The failover figures at the end of the run; with watchers and changes, each connected watcher's last version
    /// seen of every user it watches is compared with the server's view once the changes have drained.
    static func failover(
        plan: LoadPlan,
        stats: LoadStats,
        registry: DeviceRegistry,
        watches: [DeviceWatch?],
        app: StatusdApp,
        client: SetupClient
    ) async -> LoadReport.Failover {
        await stats.endMeasuring()
        var pairs: (checked: Int, behind: Int, offline: Int, neverShown: Int)?
        var watched = Set<Int32>()
        for device in plan.localDevices { watched.formUnion(watches[device]?.targets ?? []) }
        if !watched.isEmpty && !plan.rates.isEmpty {
            try? await Task.sleep(for: .seconds(max(plan.drain, 1)))
            var truth = [Int64](repeating: -1, count: plan.users)
            let ids = watched.sorted()
            var complete = true
            var start = 0
            while start < ids.count {
                let batch = ids[start..<min(start + 500, ids.count)].map { AppProvisioner.userId(Int($0)) }
                if let result = try? await client.retrying({ try await app.backendQuery(batch) }) {
                    for status in result.statuses {
                        if let index = Int(status.userId.dropFirst()), index >= 0, index < truth.count {
                            truth[index] = Int64(status.version)
                        }
                    }
                } else {
                    complete = false
                }
                start += 500
            }
            if complete {
                let truth = truth
                let counts = await stats.onEachLoop { loop -> (Int, Int, Int, Int) in
                    var unsubscribed = 0
                    var checked = 0
                    var behind = 0
                    var offline = 0
                    var shown = 0
                    for device in plan.localDevices where device % stats.loops.count == loop && registry.isConnected(device) {
                        guard let watch = watches[device] else { continue }
                        offline += watch.shownOffline
                        for (index, target) in watch.targets.enumerated() {
                            // Never shown at all (not even by the first connect's snapshot): the subscription was
                            // never made (a process of a sliced run subscribed before another created the user).
                            guard watch.versions[index] >= 0 else {
                                unsubscribed += 1
                                continue
                            }
                            checked += 1
                            if watch.versions[index] < truth[Int(target)] {
                                behind += 1
                                if shown < 5 {
                                    shown += 1
                                    Console.line(
                                        "behind: device d\(device) saw u\(target) at version \(watch.versions[index]), "
                                            + "the server has \(truth[Int(target)])"
                                    )
                                }
                            }
                        }
                    }
                    return (checked, behind, offline, unsubscribed)
                }
                let sums = counts.reduce((0, 0, 0, 0)) { ($0.0 + $1.0, $0.1 + $1.1, $0.2 + $1.2, $0.3 + $1.3) }
                pairs = (checked: sums.0, behind: sums.1, offline: sums.2, neverShown: sums.3)
            }
            // Other processes of the run compare at about the same time: none closes its devices (a change that
            // their watchers would still be receiving) before they all have.
            try? await Task.sleep(for: .seconds(max(plan.drain, 1)))
        }
        let end = await stats.snapshot()
        var histogram = LatencySummary.histogram()
        for value in end.reconnectMillis { histogram.record(UInt64(max(Double(value), 0) * 1000)) }
        if let file = plan.reconnectTimesFile {
            let text = end.reconnectMillis.map { String(format: "%.3f", Double($0)) }.joined(separator: "\n")
            try? (text + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        }
        return LoadReport.Failover(
            closed1012: end.closed1012,
            closed1013: end.closed1013,
            closedWithoutFrame: end.closedWithoutFrame,
            reconnects: end.reconnects,
            reconnectAttemptsFailed: end.reconnectAttemptsFailed,
            attemptsTimedOut: end.attemptsFailedBy[0],
            attemptsRefused: end.attemptsFailedBy[1],
            attemptsNoAddress: end.attemptsFailedBy[2],
            attemptsOtherError: end.attemptsFailedBy[3],
            attemptsClosedBeforeWelcome: end.attemptsFailedBy[4],
            refused429: end.refused429,
            refusedOther: end.refusedOther,
            reconnectTimeMs: LatencySummary(histogram),
            flaps: end.flaps,
            offlineShown: end.offlineShown,
            flapMaxMs: Double(end.flapMaxMicros / 1000),
            staleMaxMs: Double(end.staleMaxMicros / 1000),
            pairsChecked: pairs?.checked,
            pairsBehind: pairs?.behind,
            pairsShownOffline: pairs?.offline,
            pairsNeverShown: pairs?.neverShown
        )
    }

    /// The CPU seconds a step cost this process and the nodes.
    struct StepCPU {
        var own: Double
        var server: Double?
        /// Each `--pid`'s CPU seconds, in `--pid` order (0 for one that could not be read).
        var perServer: [Double] = []
    }

    /// Holds for `seconds`, or until `untilFile` exists.
    static func hold(seconds: Double, untilFile: String?) async {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            if let untilFile, FileManager.default.fileExists(atPath: untilFile) { return }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Last resort against a hung teardown: exits the process once the run has had all its time plus two minutes.
    static func armWatchdog(_ plan: LoadPlan) {
        let steps = Double(max(plan.rates.count, 1))
        let limit = plan.connectTimeout * (plan.startFile == nil ? 1 : 2) + steps * (plan.duration + plan.drain + 2) + 120
        DispatchQueue.global().asyncAfter(deadline: .now() + limit) {
            Console.line("statusload: watchdog: the run exceeded \(Int(limit)) s, exiting")
            exit(3)
        }
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func step(_ snapshot: LoadStats.Snapshot, via: String, rate: Double, seconds: Double, cpu: StepCPU) -> LoadReport.Step {
        let perNode = (0..<snapshot.expected.count).map { node in
            LoadReport.NodeFigures(
                node: node,
                eventsExpected: snapshot.expected[node],
                eventsReceived: snapshot.received[node],
                latencyMs: LatencySummary(snapshot.latencyPerNode[node])
            )
        }
        let received = snapshot.receivedTotal
        func perDelivery(_ seconds: Double?) -> Double? {
            guard let seconds, received > 0 else { return nil }
            return (seconds / Double(received) * 1e6 * 100).rounded() / 100
        }
        return LoadReport.Step(
            via: via,
            targetRate: rate,
            seconds: seconds,
            changesSent: snapshot.changesSent,
            changesFailed: snapshot.changesFailed,
            changesSkipped: snapshot.changesSkipped,
            changesPerSecond: Double(snapshot.changesSent) / max(seconds, 0.001),
            eventsExpected: snapshot.expectedTotal,
            eventsReceived: received,
            eventsLost: max(snapshot.expectedTotal - received, 0),
            deliveriesPerSecond: Double(received) / max(seconds, 0.001),
            latencyMs: LatencySummary(snapshot.latency),
            perNode: perNode,
            loadCpuSeconds: cpu.own,
            serverCpuSeconds: cpu.server,
            serverCpuSecondsPerPid: cpu.perServer,
            loadMicrosPerDelivery: perDelivery(cpu.own),
            serverMicrosPerDelivery: perDelivery(cpu.server)
        )
    }
}
