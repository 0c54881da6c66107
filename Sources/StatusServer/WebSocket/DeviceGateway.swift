import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import StatusCore

/// `GET /v1/connect`: the device WebSocket (SPEC §7). Authenticates the upgrade, registers the session in the fan-out
/// index, marks the device connected, then runs a reader and a writer until the socket ends, and files the departure.
struct DeviceGateway: Sendable {
    let services: ServerServices
    let index: FanoutIndex
    let fanout: FanoutService

    /// The validated parameters of a connect request.
    struct Parameters: Sendable {
        var app: AppRecord
        var userId: String
        var deviceId: String
        var platform: Platform
        var scope: PresenceScope
    }

    /// Largest request frame accepted from a device.
    static let maxFrameBytes = 64 * 1024

    func register(on router: Router<StatusRequestContext>) {
        router.ws(
            "v1/connect",
            shouldUpgrade: { request, context in
                do {
                    _ = try await authorize(request)
                } catch {
                    UpgradeRejections.record(ErrorMiddleware<StatusRequestContext>.statusError(for: error), for: context.channel)
                    throw error
                }
                return .upgrade([:])
            },
            onUpgrade: { inbound, outbound, context in
                guard let parameters = try? await authorize(context.request) else {
                    try await outbound.close(.policyViolation, reason: "unauthorized")
                    return
                }
                try await run(parameters, inbound: inbound, outbound: outbound, channel: context.requestContext.channel, logger: context.logger)
            }
        )
    }

    /// Checks token (401) and query parameters (400) of a connect request.
    func authorize(_ request: Request) async throws -> Parameters {
        let query = request.uri.queryParameters
        let token = Authenticator.bearer(request) ?? query.get("token").map { String($0) }
        guard let token, !token.isEmpty else { throw StatusError(.unauthorized, "missing token") }
        let (app, userId) = try await services.tokens.verify(token)
        let exists = try await services.users.existing(appId: app.appId, userIds: [userId])
        guard exists.contains(userId) else { throw StatusError(.unauthorized, "the token's user no longer exists") }
        guard let rawDevice = query.get("deviceId") else { throw StatusError(.invalidRequest, "deviceId is required") }
        let deviceId = try Identifiers.deviceId(String(rawDevice))
        guard let rawPlatform = query.get("platform") else { throw StatusError(.invalidRequest, "platform is required") }
        let platform = try Platform.parse(String(rawPlatform))
        let scope = try PresenceScope.parse(query.get("presence").map { String($0) })
        return Parameters(app: app, userId: userId, deviceId: deviceId, platform: platform, scope: scope)
    }

    private func run(
        _ parameters: Parameters,
        inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter,
        channel: any Channel,
        logger: Logger
    ) async throws {
        let session = DeviceSession(
            appId: parameters.app.appId,
            userId: parameters.userId,
            deviceId: parameters.deviceId,
            platform: parameters.platform,
            scope: parameters.scope,
            queueLimit: services.configuration.sessionQueueLimit,
            dropConnection: { channel.close(promise: nil) }
        )
        try? await channel.pipeline.addHandler(ActivityHandler(session: session), position: .first).get()
        if index.add(session) {
            await fanout.loadRelations(AppUser(appId: session.appId, userId: session.userId))
        }
        recordGauges()
        defer {
            index.remove(session)
            recordGauges()
        }
        let status: UserStatus
        do {
            try await services.nodeDevices.add(session)
            status = try await services.presence.connect(
                app: parameters.app,
                userId: session.userId,
                deviceId: session.deviceId,
                platform: session.platform,
                kind: .webSocket,
                connection: session.connectionId
            )
        } catch {
            let mapped = ErrorMiddleware<StatusRequestContext>.statusError(for: error)
            try? await outbound.writeTextMessage(DeviceFrames.failure(id: .null, mapped))
            try? await outbound.close(.unexpectedServerError, reason: mapped.code.rawValue)
            try? await services.nodeDevices.remove(session)
            return
        }
        let welcome = DeviceFrames.Welcome(
            userId: session.userId,
            deviceId: session.deviceId,
            heartbeatSeconds: parameters.app.config.heartbeatIntervalSeconds,
            status: status
        )
        try? await outbound.writeTextMessage(JSONCoding.string(welcome))
        await withDiscardingTaskGroup { group in
            group.addTask { await write(session, to: outbound) }
            group.addTask { await read(inbound, session: session) }
        }
        await depart(session, logger: logger)
    }

    private func recordGauges() {
        Metrics.connectedDevices.record(index.count)
        Metrics.onlineUsers.record(index.userCount)
    }

    /// Writes queued messages in order until the queue ends, then closes the socket.
    private func write(_ session: DeviceSession, to outbound: WebSocketOutboundWriter) async {
        for await message in session.outbound {
            if session.endedBecause == .tooSlow { break }
            switch message {
            case .text(let text):
                do { try await outbound.writeTextMessage(text) } catch { session.end(.disconnected) }
            case .kick(let reason):
                try? await outbound.writeTextMessage(DeviceFrames.kicked(reason))
            }
        }
        let tooSlow = session.endedBecause == .tooSlow
        if tooSlow { Metrics.slowConsumers.increment() }
        try? await outbound.close(tooSlow ? .policyViolation : .normalClosure, reason: tooSlow ? "too slow" : nil)
    }

    /// Reads request frames and queues their replies, until the socket closes or the session ends.
    private func read(_ inbound: WebSocketInboundStream, session: DeviceSession) async {
        let handler = DeviceRequestHandler(services: services)
        do {
            for try await message in inbound.messages(maxSize: Self.maxFrameBytes) {
                session.touch()
                guard case .text(let text) = message else {
                    session.send(.text(DeviceFrames.failure(id: .null, StatusError(.invalidRequest, "binary frames are not supported"))))
                    continue
                }
                let (reply, after) = await handler.handle(text, session: session)
                session.send(.text(reply))
                if case .close = after {
                    session.end(.removed)
                    return
                }
                if session.endedBecause != nil { return }
            }
        } catch {
            // A protocol error or an oversized frame ends the connection like a drop.
        }
        session.end(.disconnected)
    }

    /// Files how the device left: a drop, a timeout or a slow consumer make it gone (offline if last); a logout, kick
    /// or replacement was already written.
    private func depart(_ session: DeviceSession, logger: Logger) async {
        let departure: PresenceOperations.Departure?
        switch session.endedBecause {
        case .removed: departure = nil
        case .timedOut: departure = .timeout
        case .disconnected, .tooSlow, nil: departure = .disconnect
        }
        do {
            if let departure, let app = try await services.apps.find(session.appId) {
                try await services.presence.remove(
                    app: app,
                    userId: session.userId,
                    deviceIds: [session.deviceId],
                    because: departure,
                    connection: session.connectionId
                )
            }
            // Only once the departure is filed: until then the node's device list lets a survivor file it.
            try await services.nodeDevices.remove(session)
        } catch {
            logger.warning("could not file a departure", metadata: ["user": "\(session.userId)", "error": "\(error)"])
        }
    }
}
