import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import StatusCore

/// The server's connections: HTTP/1.1 for the APIs, upgraded to a device WebSocket on ``DeviceGateway/path``.
///
/// HTTP requests go to Hummingbird's router as usual. An upgrade is admitted by ``DeviceGateway`` and then the socket
/// is handed to a ``DeviceChannelHandler`` on its own event loop: Hummingbird's per-connection task returns at once,
/// so a connected device holds no task, no async channel and no stream (ARCHITECTURE "Sessions are cheap"). A refused
/// upgrade is answered with the SPEC error (status and JSON body) and the connection closed.
struct DeviceServerChannel: ServerChildChannel, HTTPChannelHandler {
    /// What a connection became.
    enum Outcome: Sendable {
        /// A device session; its handler owns the channel.
        case device
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, StatusError)
    }

    struct Value: ServerChildChannelValue {
        let outcome: EventLoopFuture<Outcome>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let gateway: DeviceGateway
    let http: HTTP1Channel.Configuration
    /// How long one request may take to arrive whole (``RequestDeadlineHandler``).
    let requestTimeout: TimeAmount

    /// Write-buffer water marks of a device socket: past `high` bytes not yet taken by the kernel, events wait in the
    /// session's bounded backlog instead.
    static let waterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 16 * 1024, high: 64 * 1024)

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let admission = NIOLoopBoundBox<DeviceGateway.Admission?>(nil, eventLoop: channel.eventLoop)
            let upgrader = DeviceUpgrader(gateway: gateway, admission: admission)
            let upgrades = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try channel.pipeline.syncOperations.addHandlers(self.http.additionalChannelHandlers())
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: self.http.idleTimeout.map { .init($0) }, logger: logger)
                        )
                        let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(isOutboundHalfClosureEnabled: true)
                        )
                        if case .refused(let error) = admission.value {
                            admission.value = nil
                            return .refused(asyncChannel, error)
                        }
                        return .http(asyncChannel)
                    }
                }
            )
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<Outcome>(upgradeConfiguration: upgrades)
            configuration.enablePipelining = false
            configuration.enableErrorHandling = false
            configuration.enableResponseHeaderValidation = false
            configuration.decoderConfiguration.maxHeaderFieldSize = http.httpDecoder.maxHeaderFieldSize
            configuration.decoderConfiguration.maxHeaderListSize = http.httpDecoder.maxHeaderListSize
            configuration.decoderConfiguration.maxHeaderFieldCount = http.httpDecoder.maxHeaderFieldCount
            let outcome = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            try MalformedRequestHandler.install(in: channel.pipeline.syncOperations)
            // Every request, the first one included, is bounded from its first byte; a device session, which carries
            // frames and has its own heartbeat timeout, is not.
            let deadline = RequestDeadlineHandler(timeout: requestTimeout, timedOut: gateway.metrics.requestTimeouts)
            try channel.pipeline.syncOperations.addHandler(deadline, position: .first)
            let loopBound = NIOLoopBound(deadline, eventLoop: channel.eventLoop)
            outcome.whenSuccess { outcome in
                guard case .device = outcome else { return }
                channel.pipeline.syncOperations.removeHandler(loopBound.value, promise: nil)
            }
            // A connection that never completes its first request is closed after the idle timeout too (HTTP's own
            // idle handling starts only once the first request is read).
            if let idleTimeout = http.idleTimeout {
                let silent = channel.eventLoop.scheduleTask(in: idleTimeout) { channel.close(promise: nil) }
                outcome.whenComplete { _ in silent.cancel() }
            }
            return Value(outcome: outcome, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.outcome.get() {
            case .device:
                // The session's handler owns the channel from here; nothing to wait for.
                return
            case .http(let http):
                // Handlers run on the connection's own event loop (see EventLoopTaskExecutor).
                await withTaskExecutorPreference(EventLoopTaskExecutor(value.channel.eventLoop)) {
                    await handleHTTP(asyncChannel: http, logger: logger)
                }
            case .refused(let http, let error):
                await refuse(http, with: error)
            }
        } catch {
            logger.debug("connection setup failed", metadata: ["error": "\(error)"])
            value.channel.close(promise: nil)
        }
    }

    /// Answers a refused upgrade with the SPEC error and closes the connection.
    private func refuse(_ channel: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, with error: StatusError) async {
        let body = ByteBuffer(string: (try? JSONCoding.string(ErrorBody(error: error))) ?? "")
        var fields: HTTPFields = [.connection: "close", .contentType: "application/json; charset=utf-8"]
        fields[.contentLength] = String(body.readableBytes)
        if let retryAfterMs = error.retryAfterMs { fields[.retryAfter] = String((retryAfterMs + 999) / 1000) }
        // Only the device WebSocket's path is ever upgraded, and only with GET.
        if error.code == .methodNotAllowed { fields[.allow] = "GET" }
        let head = HTTPResponse(status: .init(code: error.code.httpStatus), headerFields: fields)
        try? await channel.executeThenClose { _, outbound in
            try await outbound.write(contentsOf: [.head(head), .body(body), .end(nil)])
        }
    }
}
