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
        let keys = upgradeRequest.headers["Sec-WebSocket-Key"]
        guard upgradeRequest.method == .GET else {
            admission.value = .refused(StatusError(.methodNotAllowed, "a WebSocket upgrade is a GET"))
            return channel.eventLoop.makeFailedFuture(NIOWebSocketUpgradeError.invalidUpgradeHeader)
        }
        guard keys.count == 1, let key = keys.first, Self.isValidKey(key), upgradeRequest.headers["Sec-WebSocket-Version"] == ["13"],
            HeaderTokens.contains(upgradeRequest.headers["Connection"], token: "upgrade")
        else {
            admission.value = .refused(
                StatusError(.invalidRequest, "a WebSocket upgrade needs Connection: Upgrade, one Sec-WebSocket-Key and version 13")
            )
            return channel.eventLoop.makeFailedFuture(NIOWebSocketUpgradeError.invalidUpgradeHeader)
        }
        guard upgradeRequest.uri.split(separator: "?", maxSplits: 1).first.map(String.init) == DeviceGateway.path else {
            admission.value = .refused(StatusError(.notFound, "no such route"))
            return channel.eventLoop.makeFailedFuture(NIOWebSocketUpgradeError.unsupportedWebSocketTarget)
        }
        let admission = self.admission
        let admitted = gateway.admit(upgradeRequest, channel: channel)
        handedOver()
        return admitted.flatMapThrowing { result in
            admission.value = result
            guard case .accepted = result else { throw NIOWebSocketUpgradeError.unsupportedWebSocketTarget }
            var headers = initialResponseHeaders
            let accept = Data(Insecure.SHA1.hash(data: Data((key + Self.magicGUID).utf8))).base64EncodedString()
            headers.replaceOrAdd(name: "Upgrade", value: "websocket")
            headers.add(name: "Sec-WebSocket-Accept", value: accept)
            headers.replaceOrAdd(name: "Connection", value: "upgrade")
            return headers
        }
    }

    /// RFC 6455 §4.2.1: the key is 16 bytes in base64 (canonical, so that every client that follows the RFC passes and
    /// the check is the same for every decoder).
    static func isValidKey(_ key: String) -> Bool {
        guard let bytes = Data(base64Encoded: key) else { return false }
        return bytes.count == 16 && bytes.base64EncodedString() == key
    }

    func upgrade(channel: any Channel, upgradeRequest: HTTPRequestHead) -> EventLoopFuture<UpgradeResult> {
        channel.eventLoop.makeCompletedFuture {
            guard case .accepted(let session, let welcome) = admission.value, let handler = session.channelHandler else {
                throw ChannelError.inappropriateOperationForState
            }
            admission.value = nil
            try channel.syncOptions?.setOption(ChannelOptions.writeBufferWaterMark, value: DeviceServerChannel.waterMark)
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: gateway.limits.maxMessageBytes)))
            handler.welcome = welcome
            try pipeline.addHandler(handler)
            return .device
        }
    }
}
