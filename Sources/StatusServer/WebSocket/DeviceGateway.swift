import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import StatusCore
import Synchronization

/// `GET /v1/connect`, the device WebSocket (SPEC §7), around the sessions: admits an upgrade (token, parameters,
/// connect in Redis), runs a session's requests and files its departure. Everything asynchronous goes through the
/// ``DeviceWorkQueue``; the sockets themselves are driven by ``DeviceChannelHandler`` on their event loops.
///
/// A class: every device's handler and every connection's upgrader holds the gateway, and a reference is 8 bytes where
/// a copy of the repositories it reaches is kilobytes per device.
final class DeviceGateway: Sendable {
    /// Verifies the device's user token.
    let tokens: TokenService
    /// Finds a departing session's app.
    let apps: AppRegistry
    /// The node's device list, which a session joins before its connect and leaves after its departure is filed.
    let nodes: NodeRegistry
    let presence: PresenceOperations
    /// What a resuming device missed (SPEC §7).
    let resume: SessionResume
    /// What `&snapshot=true` sends (SPEC §10.6).
    let snapshot: SessionSnapshot
    /// Answers the sessions' requests.
    let requests: DeviceRequestHandler
    let index: FanoutIndex
    let fanout: FanoutService
    let work: DeviceWorkQueue
    /// Where upgrades wait for their connect: a queue of their own, running few at a time, so that a reconnect storm's
    /// connects cannot fill the node's concurrency pool (a couple of threads on a small machine) with their tasks, in
    /// front of the fan-out's and of the connected devices' requests.
    let connects: DeviceWorkQueue
    let limits: DeviceConnectionStateMachine.Limits
    /// Per-app counters of this node, handed to each session.
    let activity: AppActivity
    /// A draining node refuses new devices (SPEC §9).
    let drain: NodeDrain
    /// The node's time, handed to each session (signs of life, request bursts) and a departure's loss time.
    let clock: any NodeClock
    /// Devices and users connected here, and the slow consumers cut off.
    let metrics: NodeMetrics
    let logger: Logger
    /// The upgrades pending, and the bound that refuses more (a reconnect storm).
    private let admission: Mutex<UpgradeAdmission>

    init(
        tokens: TokenService,
        apps: AppRegistry,
        nodes: NodeRegistry,
        presence: PresenceOperations,
        resume: SessionResume,
        snapshot: SessionSnapshot,
        requests: DeviceRequestHandler,
        index: FanoutIndex,
        fanout: FanoutService,
        work: DeviceWorkQueue,
        connects: DeviceWorkQueue,
        limits: DeviceConnectionStateMachine.Limits,
        activity: AppActivity,
        drain: NodeDrain,
        admission: UpgradeAdmission.Limits = UpgradeAdmission.Limits(),
        clock: any NodeClock,
        metrics: NodeMetrics,
        logger: Logger
    ) {
        self.admission = Mutex(UpgradeAdmission(limits: admission))
        self.drain = drain
        self.tokens = tokens
        self.apps = apps
        self.nodes = nodes
        self.presence = presence
        self.resume = resume
        self.snapshot = snapshot
        self.requests = requests
        self.index = index
        self.fanout = fanout
        self.work = work
        self.connects = connects
        self.limits = limits
        self.activity = activity
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    /// The path devices connect to.
    static let path = "/v1/connect"

    /// How many steps of connects may wait on one event loop at once in the binary (``SpillingLoopTaskExecutor``):
    /// enough for a steady churn's connects to stay on their loops, few enough that a storm's go to the pool.
    static let connectShareOfLoop = 4

    /// The validated parameters of a connect request.
    struct Parameters: Sendable {
        var app: AppRecord
        var userId: String
        /// The token's generation, checked against the user's by the connect itself (a deleted user's token is 401).
        var generation: String
        var deviceId: String
        var platform: Platform
        var scope: PresenceScope
        /// The `resume` token presented, when it could be one (SPEC §7; anything else is ignored).
        var resume: String?
        /// `&snapshot=true`: the current status of everyone the device may hear about follows the welcome (SPEC §10.6).
        var snapshot = false
    }

    /// What an upgrade request gets: a session whose handler is ready to go into the pipeline, or a refusal with the
    /// SPEC error to answer.
    enum Admission: Sendable {
        case accepted(DeviceSession, welcome: OpeningFrames)
        case refused(StatusError)
    }

    /// What an admitted session's socket is sent first: the welcome, a resume's frame, a snapshot (SPEC §7, §10.6), with
    /// the status versions they carry, by user (``ResumePoint/userKey(_:)``). The handler counts those as delivered
    /// (``RecentDeliveries``): a resume after a socket that closed under the node does not send them again (SPEC §7:
    /// only what moved while the device was away). And an event older than one of them is not written after them
    /// (``DeviceConnectionStateMachine/attached(welcome:shown:nowMs:)``).
    struct OpeningFrames: Sendable {
        var bytes: ByteBuffer
        var statuses: [(userKey: UInt64, version: Int64)] = []

        mutating func append(_ frame: ByteBuffer, carrying statuses: [UserStatus]) {
            var frame = frame
            bytes.writeBuffer(&frame)
            self.statuses += statuses.map { (ResumePoint.userKey($0.userId), $0.version) }
        }
    }

    /// Admits or refuses an upgrade request; the future completes on the channel's event loop. Refused at once, before
    /// any work, when the node is stopping or has too many upgrades pending (``UpgradeAdmission``).
    func admit(_ head: HTTPRequestHead, channel: any Channel) -> EventLoopFuture<Admission> {
        let (arrival, pending) = admission.withLock { ($0.arrive(draining: drain.isDraining, nowMs: Self.uptimeMs), $0.pending) }
        if case .refuse(let refusal) = arrival {
            return channel.eventLoop.makeSucceededFuture(.refused(refused(refusal)))
        }
        metrics.pendingUpgrades.record(pending)
        let promise = channel.eventLoop.makePromise(of: Admission.self)
        let queuedAt = ContinuousClock.now
        let queued = connects.submit {
            let waitedMs = (ContinuousClock.now - queuedAt).inMilliseconds
            self.metrics.upgradeWait.recordMilliseconds(waitedMs)
            self.fanout.connectWaited(ms: waitedMs)
            let turn = self.admission.withLock {
                $0.turn(waitedMs: waitedMs, draining: self.drain.isDraining, connectionOpen: channel.isActive, nowMs: Self.uptimeMs)
            }
            switch turn {
            case .connect:
                let result: Admission
                do {
                    let (session, welcome) = try await self.open(head, channel: channel)
                    result = .accepted(session, welcome: welcome)
                } catch {
                    result = .refused(ErrorAnswers.statusError(for: error))
                }
                self.metrics.deviceUpgrades(Self.outcome(of: result, channelOpen: channel.isActive)).increment()
                promise.succeed(result)
            case .refuse(let refusal):
                promise.succeed(.refused(self.refused(refusal)))
            case .skip:
                self.metrics.deviceUpgrades("gone").increment()
                promise.succeed(.refused(StatusError(.unavailable, "the connection closed before its turn")))
            }
            self.finishAdmission()
        }
        if !queued {
            finishAdmission()
            promise.succeed(.refused(refused(.busy)))
        }
        return promise.futureResult
    }

    /// The 503 of a refused upgrade, counted.
    private func refused(_ refusal: UpgradeAdmission.Refusal) -> StatusError {
        metrics.deviceUpgrades(UpgradeAdmission.outcome(of: refusal)).increment()
        let message =
            switch refusal {
            case .draining: "the node is shutting down"
            case .busy, .late: "the node is busy connecting other devices, try again"
            }
        let retryAfterMs = admission.withLock { $0.retryAfterMs(for: refusal, nowMs: Self.uptimeMs) }
        return StatusError(.unavailable, message, retryAfterMs: retryAfterMs)
    }

    private func finishAdmission() {
        let pending = admission.withLock {
            $0.finish()
            return $0.pending
        }
        metrics.pendingUpgrades.record(pending)
    }

    /// The clock of ``UpgradeAdmission``: the system's uptime in ms.
    private static var uptimeMs: Int64 { Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000) }

    /// The `outcome` label of ``Metrics/deviceUpgrades(_:)`` for an admission that ran its connect.
    private static func outcome(of admission: Admission, channelOpen: Bool) -> String {
        guard channelOpen else { return "gone" }
        switch admission {
        case .accepted: return "accepted"
        case .refused(let error): return error.code == .unavailable ? "unavailable" : "refused"
        }
    }

    /// Checks the token (401), the browser's origin against the app's `allowedOrigins` (403) and the query parameters
    /// (400) of a connect request.
    func authorize(_ head: HTTPRequestHead) async throws -> Parameters {
        let uri = URI(head.uri)
        let query = uri.queryParameters
        let header = head.headers.first(name: "Authorization")
        let bearer = header.flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        let token = bearer ?? query.get("token").map { String($0) }
        guard let token, !token.isEmpty else { throw StatusError(.unauthorized, "missing token") }
        // The user's token generation is checked by the connect script: a deleted user's token is refused there.
        let verified = try await tokens.verify(token)
        let app = verified.app
        // Browsers only: a page of an origin the app does not list may not use a token it got hold of.
        guard AllowedOrigins.admits(head.headers["Origin"], allowed: app.config.allowedOrigins) else {
            throw StatusError(.forbidden, "this origin may not connect to app \(app.appId)")
        }
        guard let rawDevice = query.get("deviceId") else { throw StatusError(.invalidRequest, "deviceId is required") }
        let deviceId = try Identifiers.deviceId(String(rawDevice))
        guard let rawPlatform = query.get("platform") else { throw StatusError(.invalidRequest, "platform is required") }
        let platform = try Platform.parse(String(rawPlatform))
        let scope = try PresenceScope.parse(query.get("presence").map { String($0) })
        let resume = query.get("resume").map { String($0) }.flatMap { ResumePoint.isPlausible(token: $0) ? $0 : nil }
        let snapshot: Bool
        switch query.get("snapshot").map({ String($0) }) {
        case nil, "false": snapshot = false
        case "true": snapshot = true
        default: throw StatusError(.invalidRequest, "snapshot must be true or false")
        }
        return Parameters(
            app: app,
            userId: verified.userId,
            generation: verified.generation,
            deviceId: deviceId,
            platform: platform,
            scope: scope,
            resume: resume,
            snapshot: snapshot
        )
    }

    /// Authorizes, registers the session in the fan-out index (so no event is missed from here on: it waits in the
    /// session's backlog until the welcome is written), checks the connect rate limit and connects the device in Redis.
    private func open(_ head: HTTPRequestHead, channel: any Channel) async throws -> (DeviceSession, OpeningFrames) {
        let parameters = try await authorize(head)
        let session = DeviceSession(
            appId: parameters.app.appId,
            userId: parameters.userId,
            deviceId: parameters.deviceId,
            platform: parameters.platform,
            scope: parameters.scope,
            eventLoop: channel.eventLoop,
            activity: activity.counters(for: parameters.app.appId),
            clock: clock,
            makeHandler: { [self] in DeviceChannelHandler(session: $0, gateway: self, limits: self.limits) }
        )
        let joining = await fanout.join(session)
        recordGauges()
        var relations: Relations? = nil
        // A connect past the limit is refused before it stores, reads or subscribes to anything of the user (SPEC
        // §10.6, §10.7). Admitted, the same step reads the user's relationships when the node does not know them yet
        // and already hears the user's channel (``FanoutService/Joining``). With nothing to read or subscribe (the node
        // knows the user and hears them), the connect script's own check is that step, and the connect is one call.
        if !joining.settled {
            do {
                relations = try await presence.admitConnect(
                    app: parameters.app,
                    userId: parameters.userId,
                    readingRelations: joining.admissionReadsRelations
                )
            } catch {
                await abandon(session, app: parameters.app, connected: false, listed: false)
                throw error
            }
        }
        let connected: PresenceOperations.Connected
        // The node's device list must hold the session by the time it is online, so that a node that dies leaves
        // nothing its reconciliation cannot find. On a single server the connect writes it in its own step; on a
        // cluster the list is in another hash slot, written first.
        let listing = await presence.statuses.isSingleServer() ? nodes.listing(of: session) : nil
        do {
            // The fan-out listens to what the session hears before the connect, so that no event is missed; on a
            // cluster the device list is written meanwhile (batched with other sessions' changes).
            if listing == nil {
                async let listed: Void = nodes.add(session)
                await fanout.settle(session, joining: joining, relations: relations)
                try await listed
            } else {
                await fanout.settle(session, joining: joining, relations: relations)
            }
            connected = try await presence.connect(
                app: parameters.app,
                userId: session.userId,
                deviceId: session.deviceId,
                platform: session.platform,
                kind: .webSocket,
                connection: session.connectionId,
                generation: parameters.generation,
                readingResumePoint: parameters.resume != nil,
                listing: listing
            )
        } catch {
            // A refused token or connect rate limit wrote nothing; any other failure may have connected the device.
            let code = (error as? StatusError)?.code
            let refused = code == .unauthorized || code == .rateLimited
            await abandon(session, app: parameters.app, connected: !refused)
            throw error
        }
        // From here the device is online in Redis: whenever the channel closes (now, if it already has), the
        // handler files its departure.
        session.markConnectedInRedis()
        channel.closeFuture.whenComplete { _ in session.channelHandler?.channelClosed() }
        let welcome = DeviceFrames.Welcome(
            userId: session.userId,
            deviceId: session.deviceId,
            heartbeatSeconds: parameters.app.config.heartbeatIntervalSeconds,
            status: connected.status,
            resume: session.connectionId
        )
        var frames = OpeningFrames(bytes: WebSocketWire.text(welcome.jsonBytes))
        if let token = parameters.resume,
            let missed = await resume.missedChanges(
                token: token,
                session: session,
                app: parameters.app,
                stored: connected.resumePoint,
                replaced: connected.replaced,
                relations: relations
            )
        {
            // Right after the welcome, before anything the session has waiting (SPEC §7).
            frames.append(missed.frame, carrying: missed.statuses)
        }
        if parameters.snapshot {
            // After the resume's frame, if any (SPEC §10.6). A read that fails refuses the upgrade (503), undoing the
            // connect like any other failure after it.
            do {
                let result = try await snapshot.read(session: session, app: parameters.app)
                frames.append(try SessionSnapshot.frame(result), carrying: result.statuses)
            } catch {
                await abandon(session, app: parameters.app, connected: true)
                throw error
            }
        }
        // The welcome's own status last: of a long snapshot, the ring of recent deliveries keeps the last ones.
        frames.statuses.append((ResumePoint.userKey(session.userId), connected.status.version))
        return (session, frames)
    }

    /// A connect that failed (or whose answer was lost) may still have been applied: removes the device by its
    /// connection id. If even that fails, the node's device list keeps it, and the node's reconciliation files it.
    /// `connected` is false when the connect is known to have written nothing (its token was refused); `listed` is false
    /// when the session never joined the node's device list (refused by its admission).
    private func abandon(_ session: DeviceSession, app: AppRecord, connected: Bool, listed: Bool = true) async {
        // The handler never gets the channel: drop it (it and the session hold each other until then).
        session.eventLoop.execute { session.releaseHandler() }
        fanout.unregister(session)
        recordGauges()
        do {
            if connected {
                try await presence.remove(
                    app: app,
                    userId: session.userId,
                    deviceIds: [session.deviceId],
                    because: .disconnect,
                    connection: session.connectionId
                )
            }
            if listed { try await nodes.remove(session) }
        } catch {
            logger.debug("a failed connect is left to reconciliation", metadata: ["error": "\(error)"])
        }
    }

    /// Runs a request of a session and hands its reply to the session's handler.
    func execute(_ request: ByteBuffer, for session: DeviceSession, replyingTo handler: NIOLoopBound<DeviceChannelHandler>) {
        let requests = self.requests
        let queued = work.submit {
            let (reply, after) = await requests.handle(request, session: session)
            let frame = WebSocketWire.text(reply)
            session.eventLoop.execute { handler.value.requestFinished(frame, closeAfter: after == .close) }
        }
        if !queued {
            let refusal = WebSocketWire.text(requests.refusal(of: request, StatusError(.unavailable, "the node is overloaded")))
            session.eventLoop.execute { handler.value.requestFinished(refusal, closeAfter: false) }
        }
    }

    /// Files how the device left, once its channel has closed: a drop, a timeout or a slow consumer make it gone
    /// (offline if last); a logout, kick or replacement was already written.
    func depart(_ session: DeviceSession, because ending: DeviceSession.Ending, delivered: borrowing RecentDeliveries) {
        // Events written since the device last showed a sign of life may never have reached it: a resume resends
        // what changed from then on (SPEC §7). A socket that closed under the node (not a silent one given up on)
        // was alive until then: the versions written to it in that window are recorded, and not sent again.
        let closedUnderNode = ending == .disconnected || ending == .cutOff || ending == .draining
        let sent = closedUnderNode ? delivered.versions(since: session.lastActiveMs - ResumePoint.clockMargin) : [:]
        if ending == .tooSlow { metrics.slowConsumers.increment() }
        // Whom the session heard about, read from the index now, while its user's relationships are still there.
        let heard = (facts: index.watched(by: session), blocked: index.blocked(by: session))
        let queued = work.submit { await self.fileDeparture(session, because: ending, delivered: sent, heard: heard) }
        if !queued {
            // Still on the node's device list: its reconciliation files the departure; the housekeeping drops the
            // bus channels nobody needs any more.
            fanout.unregister(session)
            recordGauges()
        }
    }

    private func fileDeparture(
        _ session: DeviceSession,
        because ending: DeviceSession.Ending,
        delivered: [UInt64: Int64],
        heard: (facts: [Entitlement.Facts], blocked: Set<String>)
    ) async {
        let departure: PresenceOperations.Departure?
        switch ending {
        case .removed: departure = nil
        case .timedOut: departure = .timeout
        case .disconnected, .tooSlow, .cutOff, .draining: departure = .disconnect
        }
        do {
            if let departure, let app = try await apps.find(session.appId) {
                // With its resume point, in one step (SPEC §7), dated from the last sign of life: measured here, as
                // the write leaves, so that the time it waited in the queue counts too.
                try await presence.remove(
                    app: app,
                    userId: session.userId,
                    deviceIds: [session.deviceId],
                    because: departure,
                    connection: session.connectionId,
                    lostAgoMs: session.silenceMs + ResumePoint.clockMargin,
                    delivered: delivered,
                    audience: ResumePoint.Audience.of(
                        userId: session.userId,
                        scope: session.scope,
                        facts: heard.facts,
                        blocked: heard.blocked,
                        config: app.config
                    )
                )
            }
            if departure != nil {
                let reason = ending == .timedOut ? "timeout" : ending == .tooSlow ? "slow" : "disconnect"
                activity.accuracy.departureFiled(reason: reason, lagMs: session.silenceMs)
            }
            // Only once the departure is filed: until then the node's device list lets its reconciliation file it.
            try await nodes.remove(session)
        } catch {
            logger.warning("could not file a departure", metadata: ["user": "\(session.userId)", "error": "\(error)"])
        }
        fanout.unregister(session)
        recordGauges()
    }

    private func recordGauges() {
        metrics.connectedDevices.record(index.count)
        metrics.onlineUsers.record(index.userCount)
    }
}
