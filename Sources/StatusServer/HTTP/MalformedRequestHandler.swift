import NIOCore
import NIOHTTP1
import StatusCore

/// Answers every malformed HTTP/1.1 request with the SPEC §7 error body (`400 INVALID_REQUEST`) and closes the
/// connection, instead of leaving it unanswered or answering with an empty body.
///
/// It sits right after NIO's request decoder, ahead of the upgrade handler and the HTTP-types conversion, so it sees
/// both the decoder's parse errors (which would otherwise reach handlers that answer nothing or an empty 400) and
/// request heads that parse but that later stages cannot represent: bytes outside printable ASCII in the target,
/// control characters (a NUL byte, say) in a header, a header name that is not a token, or a body framed twice
/// (`Transfer-Encoding` with `Content-Length`, RFC 9112 §6.3: a request smuggling vector). A request asking for a
/// WebSocket upgrade takes the handler out of the pipeline, since an accepted upgrade carries frames, not HTTP; an
/// `Upgrade` header naming other protocols is dropped, and the request answered as plain HTTP.
final class MalformedRequestHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// A response has started and not ended: an error then can only close the connection.
    private var responding = false
    /// The connection was refused; everything after is dropped.
    private var refused = false

    /// Adds the handler right after the HTTP request decoder of an HTTP/1.1 server pipeline.
    static func install(in pipeline: ChannelPipeline.SynchronousOperations) throws {
        let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
        try pipeline.addHandler(MalformedRequestHandler(), position: .after(decoder))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let part = unwrapInboundIn(data)
        if case .head(var head) = part {
            if let problem = Self.problem(with: head) {
                refuse(context: context, message: problem)
                return
            }
            if head.headers.contains(name: "upgrade") {
                let protocols = head.headers["upgrade"].flatMap { $0.split(separator: ",") }
                if protocols.contains(where: { $0.trimmingCharacters(in: .whitespaces).lowercased() == "websocket" }) {
                    context.fireChannelRead(data)
                    context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                    return
                }
                // statusd speaks no other protocol, and a server may ignore `Upgrade` (RFC 9110 §7.8); it must, here:
                // NIO's upgrade handler loses the request head when no upgrader takes the protocol, and the
                // connection would close unanswered.
                head.headers.remove(name: "upgrade")
                context.fireChannelRead(wrapInboundOut(.head(head)))
                return
            }
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        // The decoder closes the channel right after this returns: answer now, synchronously.
        refuse(context: context, message: "malformed HTTP request")
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200: responding = true
        case .end: responding = false
        default: break
        }
        context.write(data, promise: promise)
    }

    private func refuse(context: ChannelHandlerContext, message: String) {
        guard !refused else { return }
        refused = true
        if !responding {
            let error = StatusError(.invalidRequest, message)
            let body = ByteBuffer(string: (try? JSONCoding.string(ErrorBody(error: error))) ?? "")
            let headers = HTTPHeaders([
                ("Connection", "close"), ("Content-Type", "application/json; charset=utf-8"), ("Content-Length", String(body.readableBytes)),
            ])
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.close(promise: nil)
    }

    /// Why a request head cannot be served, or nil.
    static func problem(with head: HTTPRequestHead) -> String? {
        guard !head.uri.isEmpty, head.uri.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return "the request target must be printable ASCII"
        }
        for (name, value) in head.headers {
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else { return "malformed header name" }
            guard value.utf8.allSatisfy({ $0 == 0x09 || (0x20...0x7E).contains($0) || $0 >= 0x80 }) else {
                return "control characters in header \(name)"
            }
        }
        let transferEncoding = head.headers["transfer-encoding"]
        let contentLength = head.headers["content-length"]
        if !transferEncoding.isEmpty && !contentLength.isEmpty {
            return "a request may not carry both Transfer-Encoding and Content-Length"
        }
        if contentLength.count > 1 { return "more than one Content-Length" }
        return nil
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            // RFC 9110 tchar punctuation, matched without building a table per byte (this runs for every header name).
            return true
        default:
            return false
        }
    }
}
