import Foundation
import Logging
import RedisClient
import ServiceLifecycle
import StatusCore

/// The node's periodic work, one loop for all sessions (no timer per socket):
/// - every tick (`housekeepingInterval`, 500 ms by default), ends WebSocket sessions silent for longer than their app's
///   `heartbeatTimeoutSeconds` (their sockets then close within the close grace period, whatever the peer does);
/// - every second, turns backend-driven devices without a heartbeat for that long offline (visiting only the apps that
///   have such devices);
/// - every third of a lease, renews the node's lease, files the devices of nodes whose lease expired, files its own
///   departures that could not be written, and, when it finds its own lease had expired (the node was stalled or cut
///   from Redis), files its live sessions online again (SPEC §9: a stalled node never leaves its users offline); and
///   renews the mark of the apps it holds `all`/`roles:` sessions of (``RecentChanges``), and drops the bus channels
///   nobody here watches any more.
struct HousekeepingService: Service {
    let services: ServerServices
    let index: FanoutIndex
    let fanout: FanoutService
    let logger: Logger

    func run() async throws {
        let registry = services.nodeDevices
        let tick = services.configuration.housekeepingInterval
        let ticksPerSecond = max(1, Int(Duration.seconds(1) / tick))
        let leaseEvery = max(1, registry.leaseSeconds * ticksPerSecond / 3)
        // Graceful shutdown cancels the loop at once (mid-sleep too), then the node leaves.
        try? await cancelWhenGracefulShutdown {
            var ticks = 0
            /// Lease renewals left during which live sessions are checked against Redis after a lost lease.
            var refileChecks = 0
            while !Task.isCancelled {
                await endSilentSessions()
                if ticks % leaseEvery == 0 {
                    await guarded("lease renewal") {
                        if try await registry.renew() == .lost { refileChecks = 3 }
                    }
                    await guarded("dead node cleanup") { try await cleanUpDeadNodes() }
                    await guarded("own device reconciliation") { try await fileUnfiledDepartures() }
                    await guarded("unfinished app deletions") { try await services.apps.finishUnfinishedDeletions() }
                    if refileChecks > 0 {
                        refileChecks -= 1
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
                try await Task.sleep(for: tick)
            }
        }
        await guarded("leaving") { try await registry.leave() }
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
            let key = RedisKeys(appId: session.appId).user(session.userId).devices
            let stored = try await services.redis.send("HGET", key, session.deviceId)
            if let record = DeviceRecord.decode(stored) {
                if record.connection != session.connectionId { session.kick(reason: "replaced") }
                continue
            }
            guard let app = try await services.apps.find(session.appId) else { continue }
            try await services.nodeDevices.add(session)
            _ = try await services.presence.connect(
                app: app,
                userId: session.userId,
                deviceId: session.deviceId,
                platform: session.platform,
                kind: .webSocket,
                connection: session.connectionId
            )
        }
    }

    private func endSilentSessions() async {
        let now = DeviceSession.monotonicMs()
        var deadlines: [String: Int64] = [:]
        for appId in index.appIds() {
            let config = try? await services.apps.find(appId)?.config
            deadlines[appId] = now - Int64(config?.heartbeatTimeoutSeconds ?? AppConfig().heartbeatTimeoutSeconds) * 1000
        }
        for session in index.sessions(lastActiveBefore: deadlines) {
            session.end(.timedOut)
        }
    }

    /// Visits only the apps that have backend-driven devices (an index kept by device login), so that the work does
    /// not grow with the number of apps; an app that no longer exists leaves the index.
    private func sweepBackendDevices() async throws {
        for appId in try await services.presence.appsWithBackendDevices() {
            guard let app = try await services.apps.find(appId) else {
                // Deleted (its heartbeats went with it); an appId created again re-enters on its first backend login.
                if try await services.redis.send("ZCARD", RedisKeys(appId: appId).heartbeats).int == 0 {
                    _ = try await services.redis.send("SREM", RedisKeys.backendApps, appId)
                }
                continue
            }
            _ = try await services.presence.sweepBackendDevices(app: app)
        }
    }

    /// Files the departures this node could not write when their sockets closed (Redis was unreachable then): devices
    /// still listed under this node whose connection has no session here any more.
    private func fileUnfiledDepartures() async throws {
        let registry = services.nodeDevices
        // The list first, then the sessions: a session is indexed before it is listed and listed until its departure
        // is filed, so a device listed here without a session has really gone.
        let listed = try await registry.devices(of: registry.nodeId)
        let live = Set(index.allSessions().map(\.connectionId))
        for device in listed where !live.contains(device.connection) {
            try await fileDisconnect(device)
            try await registry.remove(appId: device.appId, userId: device.userId, deviceId: device.deviceId, connection: device.connection)
        }
    }

    private func cleanUpDeadNodes() async throws {
        let registry = services.nodeDevices
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
        guard let app = try await services.apps.find(device.appId) else { return }
        let lostAt = WallClock.nowMs() - 2 * Int64(services.nodeDevices.leaseSeconds) * 1000 - ResumePoint.clockMargin
        try await services.presence.remove(
            app: app,
            userId: device.userId,
            deviceIds: [device.deviceId],
            because: .disconnect,
            connection: device.connection,
            lostAt: lostAt
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
