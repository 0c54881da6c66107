import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOWebSocket
import StatusCore

/// The WebSocket upgrade of `GET /v1/connect` (RFC 6455 §4.2): admits the device through ``DeviceGateway``, answers the
/// handshake, and leaves the channel with NIO's frame decoder and the session's ``DeviceChannelHandler``.
///
/// NIO's own upgrader always adds a frame encoder, which would copy a header buffer in front of every frame; statusd
/// writes whole, pre-encoded frames shared between recipients, so its pipeline has no encoder at all.
struct DeviceUpgrader: NIOTypedHTTPServerProtocolUpgrader {
    typealias UpgradeResult = DeviceServerChannel.Outcome

    let gateway: DeviceGateway
    /// What the admission decided, for `upgrade` (accepted) or the not-upgrading path (refused).
    let admission: NIOLoopBoundBox<DeviceGateway.Admission?>
    /// Called on the event loop when the request goes to the gateway: the connection's task need not wait for it.
    let handedOver: @Sendable () -> Void

    let supportedProtocol = "websocket"
    let requiredUpgradeHeaders: [String] = []

    private static let magicGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    func buildUpgradeResponse(
        channel: any Channel,
        upgradeRequest: HTTPRequestHead,
        initialResponseHeaders: HTTPHeaders
    ) -> EventLoopFuture<HTTPHeaders> {
        if let problem = Self.problem(with: upgradeRequest) {
            admission.value = .refused(problem)
            return channel.eventLoop.makeFailedFuture(NIOWebSocketUpgradeError.invalidUpgradeHeader)
        }
        let admission = self.admission
        let admitted = gateway.admit(upgradeRequest, channel: channel)
        handedOver()
        return admitted.flatMapThrowing { result in
            admission.value = result
            guard case .accepted = result else { throw NIOWebSocketUpgradeError.unsupportedWebSocketTarget }
            var headers = initialResponseHeaders
            headers.replaceOrAdd(name: "Upgrade", value: "websocket")
            headers.add(name: "Sec-WebSocket-Accept", value: Self.accept(upgradeRequest))
            headers.replaceOrAdd(name: "Connection", value: "upgrade")
            return headers
        }
    }

    /// Why `head` is not an upgrade of the device path this server takes (the SPEC error it is answered), or nil.
    /// NIO's upgrade handler asks the upgrader only for a request whose `Upgrade` header names `websocket`; the request
    /// read without it (``DeviceUpgradeHead``) is checked for that too.
    static func problem(with head: HTTPRequestHead) -> StatusError? {
        guard head.method == .GET else { return StatusError(.methodNotAllowed, "a WebSocket upgrade is a GET") }
        let keys = head.headers["Sec-WebSocket-Key"]
        guard keys.count == 1, let key = keys.first, isValidKey(key), head.headers["Sec-WebSocket-Version"] == ["13"],
            HeaderTokens.contains(head.headers["Connection"], token: "upgrade"),
            HeaderTokens.contains(head.headers["Upgrade"], token: "websocket")
        else {
            return StatusError(.invalidRequest, "a WebSocket upgrade needs Connection: Upgrade, one Sec-WebSocket-Key and version 13")
        }
        guard head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) == DeviceGateway.path else {
            return StatusError(.notFound, "no such route")
        }
        return nil
    }

    /// RFC 6455 §4.2.2: the `Sec-WebSocket-Accept` of a request that passed ``problem(with:)``.
    static func accept(_ head: HTTPRequestHead) -> String {
        let key = head.headers.first(name: "Sec-WebSocket-Key") ?? ""
        return Data(Insecure.SHA1.hash(data: Data((key + magicGUID).utf8))).base64EncodedString()
    }

    /// RFC 6455 §4.2.1: the key is 16 bytes in base64 (canonical, so that every client that follows the RFC passes and
    /// the check is the same for every decoder).
    static func isValidKey(_ key: String) -> Bool {
        guard let bytes = Data(base64Encoded: key) else { return false }
        return bytes.count == 16 && bytes.base64EncodedString() == key
    }

    func upgrade(channel: any Channel, upgradeRequest: HTTPRequestHead) -> EventLoopFuture<UpgradeResult> {
        channel.eventLoop.makeCompletedFuture {
            guard case .accepted(let session, let welcome) = admission.value else { throw ChannelError.inappropriateOperationForState }
            admission.value = nil
            try Self.installSession(session, welcome: welcome, in: channel, maxFrameSize: gateway.limits.maxMessageBytes)
            return .device
        }
    }

    /// Leaves an upgraded channel with NIO's frame decoder and the session's handler, which sends the welcome once
    /// added (`position`: where they go; the end of the pipeline unless said).
    static func installSession(
        _ session: DeviceSession,
        welcome: DeviceGateway.OpeningFrames,
        in channel: any Channel,
        maxFrameSize: Int,
        after position: (any ChannelHandler)? = nil
    ) throws {
        guard let handler = session.channelHandler else { throw ChannelError.inappropriateOperationForState }
        try channel.syncOptions?.setOption(ChannelOptions.writeBufferWaterMark, value: DeviceServerChannel.waterMark)
        let pipeline = channel.pipeline.syncOperations
        let decoder = ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxFrameSize))
        if let position {
            try pipeline.addHandler(decoder, position: .after(position))
        } else {
            try pipeline.addHandler(decoder)
        }
        handler.welcome = welcome
        try pipeline.addHandler(handler, position: .after(decoder))
    }
}
