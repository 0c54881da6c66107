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
/// A connection starts with ``DeviceUpgradeSniffer``, which takes a plain device upgrade itself and hands everything
/// else to NIO's HTTP codec (``configureHTTP(_:logger:settle:)``), set up only then.
///
/// HTTP requests go to Hummingbird's router as usual. An upgrade is admitted by ``DeviceGateway`` and then the socket
/// is handed to a ``DeviceChannelHandler`` on its own event loop: Hummingbird's per-connection task returns as soon as
/// the upgrade request is handed to the gateway, so neither a device waiting for its admission nor a connected one
/// holds a task, an async channel or a stream (ARCHITECTURE "Sessions are cheap"). A refused upgrade is answered on
/// the event loop with the SPEC error (status and JSON body) and the connection closed.
///
/// Not holding a task while an upgrade waits matters under a reconnect storm: Hummingbird runs each connection's task
/// in one task group, and the Swift runtime finds a finished child in its group's list by walking it, so with
/// thousands of upgrades waiting every connection that ended paid a walk over all of them.
struct DeviceServerChannel: ServerChildChannel, HTTPChannelHandler {
    /// What a connection became.
    enum Outcome: Sendable {
        /// A device: its upgrade is with the gateway (admitted, being admitted, or refused and answered), which owns
        /// the channel from here.
        case device
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
    }

    struct Value: ServerChildChannelValue {
        /// Completes as soon as the connection is known to be a device (its upgrade request handed to the gateway) or
        /// plain HTTP.
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
            // What `handle` waits for: the upgrade handed to the gateway, or whatever the pipeline's outcome is first.
            let known = channel.eventLoop.makePromise(of: Outcome.self)
            let settled = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
            let settle: @Sendable (Result<Outcome, any Error>) -> Void = { result in
                guard !settled.value else { return }
                settled.value = true
                known.completeWith(result)
            }
            // Every request, the first one included, is bounded from its first byte; a device session, which carries
            // frames and has its own heartbeat timeout, is not.
            let deadline = RequestDeadlineHandler(timeout: requestTimeout, timedOut: gateway.metrics.requestTimeouts)
            try channel.pipeline.syncOperations.addHandler(deadline)
            let loopBound = NIOLoopBound(deadline, eventLoop: channel.eventLoop)
            // A connection that never completes its first request is closed after the idle timeout too (HTTP's own
            // idle handling starts only once the first request is read).
            let silent = http.idleTimeout.map { idleTimeout in
                channel.eventLoop.scheduleTask(in: idleTimeout) { channel.close(promise: nil) }
            }
            // An upgrade answered: the request's limits are done with.
            let upgraded: @Sendable () -> Void = {
                channel.pipeline.syncOperations.removeHandler(loopBound.value, promise: nil)
                silent?.cancel()
            }
            let sniffer = DeviceUpgradeSniffer(
                .init(
                    gateway: gateway,
                    maxHeadBytes: min(http.httpDecoder.maxHeaderFieldSize, http.httpDecoder.maxHeaderListSize),
                    maxHeaderFields: http.httpDecoder.maxHeaderFieldCount,
                    toHTTP: { channel in
                        let outcome = try configureHTTP(channel, logger: logger, settle: settle)
                        outcome.whenComplete { result in
                            if case .success(.device) = result {
                                upgraded()
                            } else {
                                silent?.cancel()
                            }
                        }
                    },
                    handedOver: { settle(.success(.device)) },
                    answered: upgraded
                )
            )
            try channel.pipeline.syncOperations.addHandler(sniffer)
            return Value(outcome: known.futureResult, channel: channel)
        }
    }

    /// Sets `channel` up for NIO's HTTP codec and typed upgrader (every connection but the device upgrades
    /// ``DeviceUpgradeSniffer`` takes), after the handlers there: HTTP requests go to Hummingbird, an upgrade to
    /// ``DeviceUpgrader``. Returns the pipeline's outcome; `settle` hears of it too.
    private func configureHTTP(
        _ channel: any Channel,
        logger: Logger,
        settle: @escaping @Sendable (Result<Outcome, any Error>) -> Void
    ) throws -> EventLoopFuture<Outcome> {
        let admission = NIOLoopBoundBox<DeviceGateway.Admission?>(nil, eventLoop: channel.eventLoop)
        let upgrader = DeviceUpgrader(gateway: gateway, admission: admission, handedOver: { settle(.success(.device)) })
        let upgrades = NIOTypedHTTPServerUpgradeConfiguration(
            upgraders: [upgrader],
            notUpgradingCompletionHandler: { channel in
                channel.eventLoop.makeCompletedFuture {
                    if case .refused(let error) = admission.value {
                        admission.value = nil
                        Self.answer(channel, refusing: error)
                        return .device
                    }
                    try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                    try channel.pipeline.syncOperations.addHandlers(self.http.additionalChannelHandlers())
                    try channel.pipeline.syncOperations.addHandler(
                        HTTPConnectionStateHandler(idleTimeout: self.http.idleTimeout.map { .init($0) }, logger: logger)
                    )
                    let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(isOutboundHalfClosureEnabled: true)
                    )
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
        outcome.whenComplete { result in
            // An upgrade that failed after its hand-over (the connection closed under it): nobody waits for it.
            if case .failure = result { channel.close(promise: nil) }
            settle(result)
        }
        return outcome
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
            }
        } catch {
            logger.debug("connection setup failed", metadata: ["error": "\(error)"])
            value.channel.close(promise: nil)
        }
    }

    /// Answers a refused upgrade with the SPEC error and closes the connection, on its event loop. NIO's response
    /// encoder is still in the pipeline (the request was not upgraded).
    static func answer(_ channel: any Channel, refusing error: StatusError) {
        let (head, body) = refusal(error)
        let pipeline = channel.pipeline.syncOperations
        pipeline.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        pipeline.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil)
        let written = channel.eventLoop.makePromise(of: Void.self)
        pipeline.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: written)
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
    }

    /// The answer to a refused upgrade: its head and body, for NIO's response encoder.
    static func refusal(_ error: StatusError) -> (head: HTTPResponseHead, body: ByteBuffer) {
        let body = ByteBuffer(string: (try? JSONCoding.string(ErrorBody(error: error))) ?? "")
        var headers = HTTPHeaders([
            ("Connection", "close"), ("Content-Type", "application/json; charset=utf-8"), ("Content-Length", String(body.readableBytes)),
        ])
        if let retryAfterMs = error.retryAfterMs { headers.add(name: "Retry-After", value: String((retryAfterMs + 999) / 1000)) }
        // Only the device WebSocket's path is ever upgraded, and only with GET.
        if error.code == .methodNotAllowed { headers.add(name: "Allow", value: "GET") }
        return (HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: error.code.httpStatus), headers: headers), body)
    }

    /// The same answer in bytes, for ``DeviceUpgradeSniffer``, whose pipeline has no encoder.
    static func refusalBytes(_ error: StatusError) -> ByteBuffer {
        let (head, body) = refusal(error)
        var bytes = ByteBuffer(string: "HTTP/1.1 \(head.status.code) \(head.status.reasonPhrase)\r\n")
        for (name, value) in head.headers { bytes.writeString("\(name): \(value)\r\n") }
        bytes.writeString("\r\n")
        bytes.writeImmutableBuffer(body)
        return bytes
    }
}
