import Crypto
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

    private static let magicGUID: [UInt8] = Array("258EAFA5-E914-47DA-95CA-C5AB0DC85B11".utf8)

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
    /// read without it (``DeviceUpgradeHead``) is checked for that too. Reads the head in place, with no copy: it runs
    /// on every connect.
    static func problem(with head: HTTPRequestHead) -> StatusError? {
        guard head.method == .GET else { return StatusError(.methodNotAllowed, "a WebSocket upgrade is a GET") }
        guard let key = only("Sec-WebSocket-Key", in: head.headers), isValidKey(key),
            only("Sec-WebSocket-Version", in: head.headers) == "13",
            HeaderTokens.contains(head.headers, name: "Connection", token: "upgrade"),
            HeaderTokens.contains(head.headers, name: "Upgrade", token: "websocket")
        else {
            return StatusError(.invalidRequest, "a WebSocket upgrade needs Connection: Upgrade, one Sec-WebSocket-Key and version 13")
        }
        let uri = head.uri.utf8
        guard uri.prefix(while: { $0 != UInt8(ascii: "?") }).elementsEqual(DeviceGateway.path.utf8) else {
            return StatusError(.notFound, "no such route")
        }
        return nil
    }

    /// The value of the one field named `name` in `headers`; nil when there is none or more than one.
    private static func only(_ name: String, in headers: HTTPHeaders) -> String? {
        var found: String?
        for field in headers where HeaderTokens.equalIgnoringCase(field.name, name) {
            guard found == nil else { return nil }
            found = field.value
        }
        return found
    }

    /// RFC 6455 §4.2.2: the `Sec-WebSocket-Accept` of a request that passed ``problem(with:)``.
    static func accept(_ head: HTTPRequestHead) -> String {
        var bytes = ByteBuffer()
        writeAccept(head, into: &bytes)
        return String(buffer: bytes)
    }

    /// Appends ``accept(_:)``'s value to `buffer`: the SHA-1 of the key and the GUID, hashed from their bytes and
    /// written in base64 without a string or `Data` in between.
    static func writeAccept(_ head: HTTPRequestHead, into buffer: inout ByteBuffer) {
        var hasher = Insecure.SHA1()
        var key = head.headers.first(name: "Sec-WebSocket-Key") ?? ""
        key.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        magicGUID.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        hasher.finalize().withUnsafeBytes { digest in
            Base64.write(digest, into: &buffer)
        }
    }

    /// RFC 6455 §4.2.1: the key is 16 bytes in base64 (canonical, so that every client that follows the RFC passes and
    /// the check is the same for every decoder): 21 characters of the base64 alphabet, a 22nd that carries two bits and
    /// four zero bits (`A`, `Q`, `g` or `w`), then `==`.
    static func isValidKey(_ key: String) -> Bool {
        let bytes = key.utf8
        guard bytes.count == 24 else { return false }
        for (position, byte) in bytes.enumerated() {
            switch position {
            case 0..<21:
                guard Base64.value(of: byte) != nil else { return false }
            case 21:
                guard let value = Base64.value(of: byte), value & 0x0F == 0 else { return false }
            default:
                guard byte == UInt8(ascii: "=") else { return false }
            }
        }
        return true
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
