import HTTPTypes
import NIOCore
import NIOHTTPTypes
import StatusCore
import Synchronization

/// Why a WebSocket upgrade was refused, per connection, until the refusal is written.
///
/// hummingbird-websocket answers every refused upgrade with a bare `400`; SPEC §7 wants `401` for a bad token and the
/// JSON error body. The connect route records its ``StatusError`` here and ``UpgradeRejectionHandler`` rewrites the
/// refusal on its way out.
enum UpgradeRejections {
    private static let pending = Mutex<[ObjectIdentifier: StatusError]>([:])

    /// Bounds the table in case a connection closes before its refusal is written.
    private static let limit = 10_000

    static func record(_ error: StatusError, for channel: any Channel) {
        pending.withLock { table in
            if table.count >= limit { table.removeAll(keepingCapacity: true) }
            table[ObjectIdentifier(channel)] = error
        }
    }

    static func take(for channel: any Channel) -> StatusError? {
        pending.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }
}

/// Rewrites the bare `400` of a refused WebSocket upgrade into the recorded SPEC error (status and JSON body).
final class UpgradeRejectionHandler: ChannelOutboundHandler, RemovableChannelHandler, Sendable {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        guard case .head(var head) = part, head.status == .badRequest, let error = UpgradeRejections.take(for: context.channel) else {
            context.write(data, promise: promise)
            return
        }
        let body = ByteBuffer(string: (try? JSONCoding.string(ErrorBody(error: error))) ?? "")
        head.status = .init(code: error.code.httpStatus)
        head.headerFields[.contentType] = "application/json; charset=utf-8"
        head.headerFields[.contentLength] = String(body.readableBytes)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: promise)
    }
}
