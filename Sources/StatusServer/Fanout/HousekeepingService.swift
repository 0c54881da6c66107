import Foundation
import Logging
import RedisClient
import ServiceLifecycle
import StatusCore

/// The node's periodic work, one loop for all sessions (no timer per socket):
/// - every second, ends WebSocket sessions silent for longer than their app's `heartbeatTimeoutSeconds`;
/// - every second, turns backend-driven devices without a heartbeat for that long offline;
/// - renews the node's lease and files the devices of nodes whose lease expired.
struct HousekeepingService: Service {
    let services: ServerServices
    let index: FanoutIndex
    let logger: Logger

    /// How often the loop runs.
    static let tick: Duration = .seconds(1)

    func run() async throws {
        let registry = services.nodeDevices
        let leaseEvery = max(1, registry.leaseSeconds / 3)
        // Graceful shutdown cancels the loop at once (mid-sleep too), then the node leaves.
        try? await cancelWhenGracefulShutdown {
            var ticks = 0
            while !Task.isCancelled {
                await endSilentSessions()
                if ticks % leaseEvery == 0 {
                    await guarded("lease renewal") { try await registry.renew() }
                    await guarded("dead node cleanup") { try await cleanUpDeadNodes() }
                    await guarded("own device reconciliation") { try await fileUnfiledDepartures() }
                }
                await guarded("backend device sweep") { try await sweepBackendDevices() }
                ticks += 1
                try await Task.sleep(for: Self.tick)
            }
        }
        await guarded("leaving") { try await registry.leave() }
    }

    private func endSilentSessions() async {
        var timeouts: [String: Int64] = [:]
        for session in index.allSessions() {
            if timeouts[session.appId] == nil {
                let config = try? await services.apps.find(session.appId)?.config
                timeouts[session.appId] = Int64(config?.heartbeatTimeoutSeconds ?? AppConfig().heartbeatTimeoutSeconds) * 1000
            }
            if let timeout = timeouts[session.appId], session.silenceMs > timeout {
                session.end(.timedOut)
            }
        }
    }

    private func sweepBackendDevices() async throws {
        for appId in try await services.apps.allAppIds() {
            guard let app = try await services.apps.find(appId) else { continue }
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

    /// Files a device's connection as gone (offline if it was its user's last), unless its app was deleted.
    private func fileDisconnect(_ device: (appId: String, userId: String, deviceId: String, connection: String)) async throws {
        guard let app = try await services.apps.find(device.appId) else { return }
        try await services.presence.remove(
            app: app,
            userId: device.userId,
            deviceIds: [device.deviceId],
            because: .disconnect,
            connection: device.connection
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
