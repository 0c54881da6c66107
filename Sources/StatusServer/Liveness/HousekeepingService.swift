import Foundation
import Logging
import ServiceLifecycle
import StatusCore
import Synchronization

/// The node's periodic work, in two loops for all sessions (no timer per socket).
///
/// The lease loop only renews the node's lease, every third of a lease, and records how late each renewal came
/// (`statusd_lease_renewal_lag_seconds`): it never waits on other work, so a node that is alive and reaches Redis never
/// loses its lease however long the rest takes (SPEC §10.7). When renewals keep failing until the lease may have run
/// out, the node is cut off from Redis: it closes its device sockets with 1013 so that they reconnect through a healthy
/// node (SPEC §9, ``NodeLeaseState``), and retries every 250 ms.
///
/// The work loop, every tick (`housekeepingInterval`, 500 ms by default), ends WebSocket sessions silent for longer
/// than their app's `heartbeatTimeoutSeconds` (their sockets then close within the close grace period, whatever the
/// peer does); every second, turns backend-driven devices without a heartbeat for that long offline (visiting only the
/// apps that have such devices); every third of a lease, files the devices of nodes whose lease expired, files its own
/// departures that could not be written, finishes app deletions whose node died, and, when the lease loop found the
/// lease had expired (the node was stalled or cut from Redis), files its live sessions online again (SPEC §9: a
/// stalled node never leaves its users offline); and renews the mark of the apps it holds `all`/`roles:` sessions of
/// (``RecentChanges``), and drops the bus channels nobody here watches any more. Twice a tick (every 250 ms by default)
/// it clears the custom statuses whose expiry came (``ExpirySweeper``, SPEC §10.2: within 1 s of the moment) and ends
/// the offline graces that ran out (``GraceSweeper``, SPEC §10.3).
struct HousekeepingService: Service {
    /// This node's lease and device list.
    let nodes: NodeRegistry
    /// The lease's bookkeeping, shared with the fan-out's bus-gap audit.
    let lease: SharedLease
    let apps: AppRegistry
    /// Files departures and re-files live sessions.
    let presence: PresenceOperations
    /// Reads a live session's record after the lease was lost.
    let deviceRecords: DeviceRecordStore
    /// The backend-driven devices' heartbeats, and which apps have such devices.
    let heartbeats: HeartbeatStore
    let expiries: ExpirySweeper
    let graces: GraceSweeper
    /// How often the work loop runs (``ServerConfiguration/housekeepingInterval``).
    let tick: Duration
    let index: FanoutIndex
    let fanout: FanoutService
    /// Where the ghost census goes.
    let accuracy: PresenceAccuracy
    /// The lease's renewal lag and the sessions cut off.
    let metrics: NodeMetrics
    /// The node's time: the ticks, the lease's renewal lag and the loss time of a dead node's devices.
    let clock: any NodeClock
    let logger: Logger

    /// How often the lease is renewed: three times per lease.
    var renewalPeriod: Duration { nodes.renewalPeriod }

    func run() async throws {
        // Graceful shutdown cancels both loops at once (mid-sleep too), then the node leaves.
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                // On the global pool, whatever executor the node's tasks prefer: never queued behind the event loops'
                // work (LoopAffineTaskExecutor).
                group.addTask(executorPreference: globalConcurrentExecutor) { await renewLease(lease) }
                group.addTask(executorPreference: globalConcurrentExecutor) { await readClocks() }
                group.addTask { await doWork(lease) }
            }
        }
        await guarded("leaving") { try await nodes.leave() }
    }

    /// The lease loop: renews on a fixed cadence, whatever the work loop is doing; after a failure, every 250 ms.
    private func renewLease(_ lease: SharedLease) async {
        let registry = nodes
        let period = renewalPeriod
        var next = clock.now
        while !Task.isCancelled {
            let sent = clock.now
            do {
                let outcome = try await registry.renew()
                let now = clock.now
                let renewed = lease.state.withLock { $0.renewed(outcome, sent: sent, at: now) }
                metrics.leaseRenewalLag.record(Double(renewed.lag.inMilliseconds) / 1000)
                next = max(next + period, now)
            } catch {
                logger.debug("lease renewal failed", metadata: ["error": "\(error)"])
                let now = clock.now
                if lease.state.withLock({ $0.renewalFailed(at: now) }) { closeSessionsCutOff() }
                next = now + NodeLeaseState.retryAfterFailure
            }
            try? await clock.sleep(until: next)
        }
    }

    /// SPEC §7: the write fence's clocks, read from every master on the lease's cadence, beside the lease loop so that a
    /// master slow to answer never delays a renewal; every 250 ms while no master could be read.
    private func readClocks() async {
        let registry = nodes
        let period = renewalPeriod
        while !Task.isCancelled {
            var next = clock.now + period
            do {
                if try await registry.readClocks() == 0 { next = clock.now + NodeLeaseState.retryAfterFailure }
            } catch {
                logger.debug("reading the redis clocks failed", metadata: ["error": "\(error)"])
                next = clock.now + NodeLeaseState.retryAfterFailure
            }
            try? await clock.sleep(until: next)
        }
    }

    /// SPEC §9: this node cannot reach Redis and its lease may have run out, so survivors show its devices offline:
    /// every device socket is closed with 1013 (try again later), for its client to reconnect through a healthy node.
    /// Their departures are filed when Redis answers again (by the node's reconciliation, if not before).
    private func closeSessionsCutOff() {
        let sessions = index.allSessions()
        guard !sessions.isEmpty else { return }
        logger.warning("cut off from redis past the lease: closing device sockets (1013)", metadata: ["sessions": "\(sessions.count)"])
        metrics.cutOffSessions.increment(by: sessions.count)
        for session in sessions { session.end(.cutOff) }
    }

    /// The work loop.
    private func doWork(_ lease: SharedLease) async {
        let ticksPerSecond = max(1, Int(Duration.seconds(1) / tick))
        let leaseEvery = max(1, Int(renewalPeriod / tick))
        var ticks = 0
        while !Task.isCancelled {
            await endSilentSessions()
            if ticks % leaseEvery == 0 {
                await guarded("dead node cleanup") { try await cleanUpDeadNodes() }
                await guarded("own device reconciliation") { try await fileUnfiledDepartures() }
                await guarded("unfinished app deletions") { try await apps.finishUnfinishedDeletions() }
                if lease.state.withLock({ $0.takeRefileCheck() }) {
                    await guarded("re-filing live sessions") { try await refileLiveSessions() }
                }
                index.pruneVersions()
                await fanout.markAppWideListeners(index.appWideApps())
                await fanout.dropUnwatchedChannels()
            }
            if ticks % ticksPerSecond == 0 {
                await guarded("backend device sweep") { try await sweepBackendDevices() }
            }
            ticks += 1
            for _ in 0..<2 {
                await guarded("custom status expiry") { try await expiries.sweep() }
                await guarded("offline grace") { try await graces.sweep() }
                try? await clock.sleep(for: tick / 2)
            }
        }
    }

    /// After this node's lease expired, survivors may have filed its devices gone. Every live session whose device
    /// record is missing is connected again (and listed under this node again); one whose device was taken over by
    /// another connection meanwhile is closed as replaced. Checked for a few lease periods, since a survivor's cleanup
    /// may still be running when the lease comes back.
    private func refileLiveSessions() async throws {
        let sessions = index.allSessions()
        guard !sessions.isEmpty else { return }
        logger.notice("lease was lost: checking live sessions against Redis", metadata: ["sessions": "\(sessions.count)"])
        for session in sessions {
            if let record = try await deviceRecords.record(appId: session.appId, userId: session.userId, deviceId: session.deviceId) {
                if record.connection != session.connectionId { session.kick(reason: "replaced") }
                continue
            }
            guard let app = try await apps.find(session.appId) else { continue }
            try await nodes.add(session)
            _ = try await presence.connect(
                app: app,
                userId: session.userId,
                deviceId: session.deviceId,
                platform: session.platform,
                kind: .webSocket,
                connection: session.connectionId,
                limited: false
            )
        }
    }

    private func endSilentSessions() async {
        let now = clock.monotonicMs
        var deadlines: [String: Int64] = [:]
        for appId in index.appIds() {
            let config = try? await apps.find(appId)?.config
            deadlines[appId] = now - Int64(config?.heartbeatTimeoutSeconds ?? AppConfig().heartbeatTimeoutSeconds) * 1000
        }
        for session in index.sessions(lastActiveBefore: deadlines) {
            session.end(.timedOut)
        }
    }

    /// Visits only the apps that have backend-driven devices (an index kept by device login), so that the work does
    /// not grow with the number of apps; an app that no longer exists leaves the index.
    private func sweepBackendDevices() async throws {
        for appId in try await heartbeats.apps() {
            guard let app = try await apps.find(appId) else {
                // Deleted (its heartbeats went with it); an appId created again re-enters on its first backend login.
                try await heartbeats.forgetIfEmpty(appId: appId)
                continue
            }
            _ = try await presence.sweepBackendDevices(app: app)
        }
    }

    /// Files the departures this node could not write when their sockets closed (Redis was unreachable then): devices
    /// still listed under this node whose connection has no session here any more.
    private func fileUnfiledDepartures() async throws {
        let registry = nodes
        // The list first, then the sessions: a session is indexed before it is listed and listed until its departure
        // is filed, so a device listed here without a session has really gone.
        let listed = try await registry.devices(of: registry.nodeId)
        let live = Set(index.allSessions().map(\.connectionId))
        // The ghost census: records watchers see online with nobody behind them, until filed here.
        accuracy.ghostCensus(listed.count { !live.contains($0.connection) })
        for device in listed where !live.contains(device.connection) {
            try await fileDisconnect(device)
            try await registry.remove(appId: device.appId, userId: device.userId, deviceId: device.deviceId, connection: device.connection)
        }
    }

    private func cleanUpDeadNodes() async throws {
        let registry = nodes
        for node in try await registry.deadNodes() {
            guard try await registry.claimCleanup(of: node) else { continue }
            let devices = try await registry.devices(of: node)
            logger.notice("filing the devices of a dead node", metadata: ["node": "\(node)", "devices": "\(devices.count)"])
            for device in devices {
                try await fileDisconnect(device)
            }
            try await registry.forget(node)
        }
    }

    /// Files a device's connection as gone (offline if it was its user's last), unless its app was deleted. Its socket
    /// was lost at an unknown moment within the last two lease periods (its node stopped renewing, or its departure
    /// could not be written): a resume resends what changed since then (SPEC §7).
    private func fileDisconnect(_ device: (appId: String, userId: String, deviceId: String, connection: String)) async throws {
        guard let app = try await apps.find(device.appId) else { return }
        let lostAgoMs = 2 * Int64(nodes.leaseSeconds) * 1000 + ResumePoint.clockMargin
        try await presence.remove(
            app: app,
            userId: device.userId,
            deviceIds: [device.deviceId],
            because: .disconnect,
            connection: device.connection,
            lostAgoMs: lostAgoMs
        )
    }

    private func guarded(_ what: String, _ work: () async throws -> Void) async {
        do {
            try await work()
        } catch {
            logger.debug("housekeeping step failed", metadata: ["step": "\(what)", "error": "\(error)"])
        }
    }
}
