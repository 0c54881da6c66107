import NIOCore

/// Sits first in a device connection's pipeline and records every inbound read as a sign of life, so that any frame,
/// WebSocket pings included, counts as a heartbeat (SPEC §7).
final class ActivityHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let session: DeviceSession

    init(session: DeviceSession) {
        self.session = session
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        session.touch()
        context.fireChannelRead(data)
    }
}
