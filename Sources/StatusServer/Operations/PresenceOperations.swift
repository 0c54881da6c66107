import Foundation
import Logging
import StatusCore

/// Device lifecycle (SPEC §2, §7): connect, heartbeat, logout, kick, disconnect and heartbeat timeouts, for WebSocket
/// devices and backend-driven ones alike.
struct PresenceOperations: Sendable {
    let statuses: StatusRepository
    let recorder: ChangeRecorder
    let bus: EventBus
    /// The heartbeats of backend-driven devices, which the housekeeping's sweep reads.
    let heartbeats: HeartbeatStore
    let webhooks: WebhookQueue
    let nodeId: String
    /// The node's wall time: backend devices' heartbeat times are written and swept with it.
    let clock: any NodeClock
    let logger: Logger

    /// Why a device went away, with the status it leaves the user in when it was the last one.
    enum Departure: Sendable {
        case logout
        case kicked
        /// Every device of a user being deleted: a kick to the webhook (SPEC §8 has no other reason), `deleted` to
        /// the device, the same reason a node that missed it finds afterwards (``DeviceRecordAudit``).
        case deleted
        case disconnect
        case timeout

        var leavingAs: StatusType {
            switch self {
            case .logout, .kicked, .deleted: .unlogined
            case .disconnect, .timeout: .offline
            }
        }

        /// The `reason` of the `kicked` event a device closed by another than itself receives.
        var closeReason: String {
            switch self {
            case .kicked: "kicked"
            case .deleted: "deleted"
            case .logout, .disconnect, .timeout: "logout"
            }
        }

        /// SPEC §8's `action` and `reason`.
        var webhook: (action: String, reason: String) {
            switch self {
            case .logout: ("logout", "unregister")
            case .kicked, .deleted: ("logout", "kicked")
            case .disconnect: ("disconnect", "linkClose")
            case .timeout: ("disconnect", "timeout")
            }
        }
    }

    /// What a connect did: the user's status after it (their own view, SPEC §10.5), and the device record it replaced
    /// (same deviceId), if any.
    struct Connected: Sendable {
        var status: UserStatus
        var replaced: DeviceRecord?
        /// The device's resume point, when the connect asked for it (SPEC §7).
        var resumePoint: ResumePoint?
    }

    /// Connects a device under the app's login rules (SPEC §3 `loginPolicy`, `maxDevicesPerUser`): devices the login
    /// kicks are closed with a `kicked` event, and a device already connected under that id is replaced and closed.
    /// A device connecting with a user token passes the token's `generation`: a user deleted since is `UNAUTHORIZED`.
    /// A device resuming asks for its resume point with the connect (`readingResumePoint`).
    /// On a single server (``StatusRepository/isSingleServer()``) a WebSocket connect passes its entry of the node's
    /// device list (`listing`), which it has not written: the connect writes it, and the app's online index, in its own
    /// step, and is one round trip (``DeviceConnect/Alongside``).
    func connect(
        app: AppRecord,
        userId: String,
        deviceId: String,
        platform: Platform,
        kind: DeviceRecord.Kind,
        connection: String,
        generation: String? = nil,
        limited: Bool = true,
        state: DeviceState = .active,
        readingResumePoint: Bool = false,
        listing: NodeRegistry.Listing? = nil
    ) async throws -> Connected {
        let record = DeviceRecord(
            platform: platform.rawValue,
            node: kind == .webSocket ? nodeId : "",
            connection: connection,
            kind: kind,
            state: state == .active ? nil : state
        )
        let alongside = listing.map {
            DeviceConnect.Alongside(nodeDevices: $0.key, member: $0.member, app: RedisKeys(appId: app.appId), keepMs: recorder.keepMs(app.config))
        }
        let connected = try await statuses.connect(
            appId: app.appId,
            userId: userId,
            deviceId: deviceId,
            record: record,
            rules: StatusRepository.LoginRules(
                maxDevices: app.config.maxDevicesPerUser,
                policy: app.config.loginPolicy,
                platform: platform,
                connectLimit: limited ? app.config.connectRateLimit : nil
            ),
            generation: generation,
            readingResumePoint: readingResumePoint,
            alongside: alongside
        )
        let result = connected.write
        if kind == .backend {
            try await heartbeats.track(appId: app.appId, userId: userId, deviceId: deviceId, nowMs: clock.nowMs)
        }
        await closeKicked(connected.kicked, app: app, userId: userId, statusType: result.reply.status.statusType)
        if let replaced = connected.replaced, replaced.connection != connection, replaced.kind == .webSocket {
            await bus.publish(
                .devicesClosed(
                    appId: app.appId,
                    userId: userId,
                    devices: [ClosedDevice(deviceId: deviceId, connection: replaced.connection)],
                    reason: "replaced"
                )
            )
        }
        if alongside == nil { await recorder.recordPresence(app: app, change: result.change, reply: result.reply) }
        await webhooks.enqueue(
            app: app,
            userId: userId,
            deviceId: deviceId,
            platform: platform.rawValue,
            action: ("login", "register"),
            statusType: result.reply.status.statusType,
            kickedDevices: connected.kicked.map { WebhookEvent.KickedDevice(deviceId: $0.deviceId, platform: $0.record.platform) }
        )
        return Connected(
            status: PresenceView.own.status(of: result.reply.record, appDefault: app.config.lastSeenPrivacy),
            replaced: connected.replaced,
            resumePoint: connected.resumePoint
        )
    }

    /// SPEC §10.6: refuses (`RATE_LIMITED`, with `retryAfterMs`) a connect of `userId` that the app's
    /// `connectRateLimit` would refuse now, before the connect costs anything else (SPEC §10.7). The connect itself
    /// counts and checks again. Admitted with `readingRelations`, it answers the user's relationships (SPEC §6), read
    /// in the same round trip.
    func admitConnect(app: AppRecord, userId: String, readingRelations: Bool) async throws -> Relations? {
        try await statuses.admitConnect(
            appId: app.appId,
            userId: userId,
            limit: app.config.connectRateLimit,
            readingRelations: readingRelations
        )
    }

    /// Devices removed by a login (SPEC §3: by the login policy, or past `maxDevicesPerUser`): their sockets are closed
    /// with `{"event": "kicked", "reason": "loginPolicy" | "tooManyDevices"}`, backend devices stop being swept, and
    /// each is a `logout`/`kicked` webhook event.
    private func closeKicked(_ kicked: [StatusRepository.KickedDevice], app: AppRecord, userId: String, statusType: StatusType) async {
        guard !kicked.isEmpty else { return }
        for reason in [StatusRepository.KickReason.loginPolicy, .tooManyDevices] {
            let sockets = kicked.filter { $0.reason == reason && $0.record.kind == .webSocket }
                .map { ClosedDevice(deviceId: $0.deviceId, connection: $0.record.connection) }
            if !sockets.isEmpty {
                await bus.publish(.devicesClosed(appId: app.appId, userId: userId, devices: sockets, reason: reason.rawValue))
            }
        }
        let backend = kicked.filter { $0.record.kind == .backend }.map(\.deviceId)
        if !backend.isEmpty {
            try? await heartbeats.untrack(appId: app.appId, userId: userId, deviceIds: backend)
        }
        for device in kicked {
            await webhooks.enqueue(
                app: app,
                userId: userId,
                deviceId: device.deviceId,
                platform: device.record.platform,
                action: Departure.kicked.webhook,
                statusType: statusType
            )
        }
    }

    /// A backend-driven device's heartbeat, with the device's state when the backend passes one (SPEC §10.4).
    func heartbeat(app: AppRecord, userId: String, deviceId: String, state: DeviceState? = nil) async throws -> UserStatus {
        let update = try await statuses.updateDevice(appId: app.appId, userId: userId, deviceId: deviceId, state: state, heartbeat: true)
        if update.found {
            try await heartbeats.beat(appId: app.appId, userId: userId, deviceId: deviceId, nowMs: clock.nowMs)
        }
        await recorder.recordPresence(app: app, change: update.write.change, reply: update.write.reply)
        return PresenceView.own.status(of: update.write.reply.record, appDefault: app.config.lastSeenPrivacy)
    }

    /// SPEC §10.4 `setDeviceState` of a connected device; returns the user's status after it.
    func setDeviceState(app: AppRecord, userId: String, deviceId: String, state: DeviceState) async throws -> UserStatus {
        let update = try await statuses.updateDevice(appId: app.appId, userId: userId, deviceId: deviceId, state: state, heartbeat: false)
        await recorder.recordPresence(app: app, change: update.write.change, reply: update.write.reply)
        return PresenceView.own.status(of: update.write.reply.record, appDefault: app.config.lastSeenPrivacy)
    }

    /// The resume point a lost socket leaves (SPEC §7), when it has a connection and a moment of loss.
    private func resumePoint(
        connection: String?,
        lostAgoMs: Int64?,
        delivered: [UInt64: Int64],
        audience: ResumePoint.Audience?
    ) -> ResumePoint.Pending? {
        guard let connection, let lostAgoMs else { return nil }
        return ResumePoint.Pending(connection: connection, lostAgoMs: lostAgoMs, delivered: delivered, audience: audience)
    }

    /// Removes devices (every device when `deviceIds` is empty) and tells the nodes holding them to close them.
    /// A WebSocket device that lost its socket passes how long before now it was lost (`lostAgoMs`, measured on the
    /// node's monotonic clock; the moment is taken on Redis's), and the versions it was sent since
    /// (`delivered`): it may resume from then (SPEC §7), for `heartbeatTimeoutSeconds`, with a reconnect presenting the
    /// connection's `resume` token. Returns the ids
    /// removed and the user's status after.
    @discardableResult
    func remove(
        app: AppRecord,
        userId: String,
        deviceIds: [String],
        because departure: Departure,
        connection: String? = nil,
        silentForMs: Int64? = nil,
        lostAgoMs: Int64? = nil,
        delivered: [UInt64: Int64] = [:],
        audience: ResumePoint.Audience? = nil
    ) async throws -> (removed: [String], status: UserStatus) {
        // On a single server the departure writes the app's online index in its own step (one round trip).
        let alongside =
            await statuses.isSingleServer()
            ? DevicesRemove.Alongside(app: RedisKeys(appId: app.appId), keepMs: recorder.keepMs(app.config)) : nil
        let result = try await statuses.remove(
            appId: app.appId,
            userId: userId,
            deviceIds: deviceIds,
            leavingAs: departure.leavingAs,
            retentionSeconds: app.config.subscriptionRetentionSeconds,
            connectionId: connection,
            silentForMs: silentForMs,
            resumePoint: resumePoint(connection: connection, lostAgoMs: lostAgoMs, delivered: delivered, audience: audience),
            resumeTTLms: Int64(app.config.heartbeatTimeoutSeconds) * 1000,
            graceSeconds: app.config.offlineGraceSeconds,
            alongside: alongside
        )
        let backend = result.removed.filter { $0.record.kind == .backend }
        if !backend.isEmpty {
            try await heartbeats.untrack(appId: app.appId, userId: userId, deviceIds: backend.map(\.deviceId))
        }
        let sockets = result.removed.filter { $0.record.kind == .webSocket && $0.record.connection != connection }
        if !sockets.isEmpty {
            let devices = sockets.map { ClosedDevice(deviceId: $0.deviceId, connection: $0.record.connection) }
            await bus.publish(.devicesClosed(appId: app.appId, userId: userId, devices: devices, reason: departure.closeReason))
        }
        await recordChange(
            app: app,
            userId: userId,
            change: result.change,
            reply: result.reply,
            clearedCustomStatus: result.clearedCustomStatus,
            indexed: alongside != nil
        )
        for device in result.removed {
            await webhooks.enqueue(
                app: app,
                userId: userId,
                deviceId: device.deviceId,
                platform: device.record.platform,
                action: departure.webhook,
                statusType: result.reply.status.statusType
            )
        }
        return (result.removed.map(\.deviceId), result.reply.status)
    }

    /// What follows a presence change a script wrote (a departure, the end of an offline grace): the online index and
    /// the log of recent changes (``ChangeRecorder``), unless the script wrote them itself (`indexed`), and, when it
    /// cleared the custom status, the webhook's `customStatusChange` (SPEC §8).
    func recordChange(
        app: AppRecord,
        userId: String,
        change: StatusRepository.Change,
        reply: StatusReply,
        clearedCustomStatus: Bool,
        indexed: Bool = false
    ) async {
        if !indexed { await recorder.recordPresence(app: app, change: change, reply: reply) }
        guard clearedCustomStatus else { return }
        await webhooks.enqueueCustomStatusChange(
            app: app,
            userId: userId,
            customStatus: nil,
            cleared: true,
            statusType: reply.status.statusType
        )
    }

    /// Turns backend-driven devices of `app` silent for longer than `heartbeatTimeoutSeconds` offline.
    /// Returns how many were removed.
    ///
    /// The index names the candidates by this node's clock; the removal itself is decided on Redis's clock, which
    /// stamped the device's heartbeat: a node whose clock runs ahead (every node sweeps every app) never turns another
    /// node's devices offline before their time.
    func sweepBackendDevices(app: AppRecord, limit: Int = 1000) async throws -> Int {
        let timeoutMs = Int64(app.config.heartbeatTimeoutSeconds) * 1000
        var removed = 0
        for entry in try await heartbeats.silent(appId: app.appId, before: clock.nowMs - timeoutMs, limit: limit) {
            let result = try await remove(
                app: app,
                userId: entry.userId,
                deviceIds: [entry.deviceId],
                because: .timeout,
                silentForMs: timeoutMs
            )
            removed += result.removed.count
            if result.removed.isEmpty {
                // Heartbeated since (its entry is renewed by that heartbeat), or gone already: then drop the entry.
                try await heartbeats.dropIfGone(appId: app.appId, entry)
            }
        }
        return removed
    }
}
