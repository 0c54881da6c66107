import NIOCore
import NIOHTTP1
import StatusCore

/// Answers every malformed HTTP/1.1 request with the SPEC §7 error body (`400 INVALID_REQUEST`) and closes the
/// connection, instead of leaving it unanswered or answering with an empty body; and keeps the request hygiene of SPEC
/// §7 that needs the request's framing rather than its route.
///
/// It sits right after NIO's request decoder, ahead of the upgrade handler and the HTTP-types conversion, so it sees
/// both the decoder's parse errors (which would otherwise reach handlers that answer nothing or an empty 400) and
/// request heads that parse but that later stages cannot represent: bytes outside printable ASCII in the target,
/// control characters (a NUL byte, say) in a header, a header name that is not a token, or a body framed twice
/// (`Transfer-Encoding` with `Content-Length`, RFC 9112 §6.3: a request smuggling vector). A request asking for a
/// WebSocket upgrade takes the handler out of the pipeline, since an accepted upgrade carries frames, not HTTP; an
/// `Upgrade` header naming other protocols is dropped, and the request answered as plain HTTP.
///
/// Request hygiene here: `CONNECT` (which NIO's parser treats as the start of a tunnel, reading nothing after it) is
/// refused with 400; a `Content-Length` past the 1 MiB body limit is 413 at once, before the body is read;
/// `Expect: 100-continue` is answered at once with `100 Continue`; a request that ran out of time or bytes
/// (``RequestDeadlineHandler``) is answered 408 or 413; and a response that says `Connection: close` closes the
/// connection once written, so a refused upgrade never leaves it open.
final class MalformedRequestHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// A response has started and not ended: an error then can only close the connection.
    private var responding = false
    /// The connection was refused; everything after is dropped.
    private var refused = false
    /// A request is being read (its head came, its end not yet).
    private var reading = false
    /// The request being read was answered already (a route answered without reading the whole body).
    private var answeredEarly = false
    /// The response being written says `Connection: close`: the connection closes once it is written.
    private var closeAfterResponse = false
    /// Requests read whole whose response has not ended yet: a parse error after them belongs to a later request.
    private var unanswered = 0

    /// Adds the handler right after the HTTP request decoder of an HTTP/1.1 server pipeline.
    static func install(in pipeline: ChannelPipeline.SynchronousOperations) throws {
        let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
        try pipeline.addHandler(MalformedRequestHandler(), position: .after(decoder))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let part = unwrapInboundIn(data)
        switch part {
        case .head(var head):
            if head.method == .CONNECT {
                refuseConnect(context: context)
                return
            }
            if let problem = Self.problem(with: head) {
                refuse(context: context, message: problem)
                return
            }
            if let declared = head.headers.first(name: "content-length").flatMap(Int.init), declared > RequestBody.maxBytes {
                refuse(context: context, StatusError(.payloadTooLarge, "request body is larger than 1 MiB"))
                return
            }
            reading = true
            answeredEarly = false
            if head.headers.contains(name: "expect") {
                guard continueIfExpected(&head, context: context) else { return }
            }
            if head.headers.contains(name: "upgrade") {
                if HeaderTokens.contains(head.headers, name: "upgrade", token: "websocket") {
                    context.fireChannelRead(wrapInboundOut(.head(head)))
                    context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                    return
                }
                // statusd speaks no other protocol, and a server may ignore `Upgrade` (RFC 9110 §7.8); it must, here:
                // NIO's upgrade handler loses the request head when no upgrader takes the protocol, and the
                // connection would close unanswered.
                head.headers.remove(name: "upgrade")
            }
            context.fireChannelRead(wrapInboundOut(.head(head)))
        case .body:
            context.fireChannelRead(data)
        case .end:
            reading = false
            unanswered += 1
            context.triggerUserOutboundEvent(RequestDeadlineHandler.RequestComplete(), promise: nil)
            context.fireChannelRead(data)
        }
    }

    /// Answers `Expect: 100-continue` at once (RFC 9110 §10.1.1) and takes the expectation off the head, so that nothing
    /// behind answers it again; the body limit was checked before. Any other expectation is 417's business, which the
    /// SPEC has no error for: it is refused as `INVALID_REQUEST`. Returns false when the request was refused.
    private func continueIfExpected(_ head: inout HTTPRequestHead, context: ChannelHandlerContext) -> Bool {
        let expectations = head.headers["expect"].flatMap { $0.split(separator: ",") }.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard expectations.allSatisfy({ $0 == "100-continue" }) else {
            refuse(context: context, message: "the only expectation supported is 100-continue")
            return false
        }
        head.headers.remove(name: "expect")
        // RFC 9110 §15.2: never to an HTTP/1.0 client.
        if head.version.major > 1 || (head.version.major == 1 && head.version.minor >= 1) {
            let interim = HTTPResponseHead(version: head.version, status: .continue)
            context.writeAndFlush(wrapOutboundOut(.head(interim)), promise: nil)
        }
        return true
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let expired = event as? RequestDeadlineHandler.Expired else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        // A request already answered (its route did not need the rest of the body) gets no second answer.
        if answeredEarly {
            refused = true
            context.close(promise: nil)
            return
        }
        switch expired {
        case .timeout:
            refuse(context: context, StatusError(.requestTimeout, "the request did not arrive whole within the time limit"))
        case .tooLarge:
            refuse(context: context, StatusError(.payloadTooLarge, "the request is larger than any request may be"))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        // Bytes after a request that is still being answered (pipelined): a 400 now would be read as that request's
        // answer, and say it was refused when it was carried out. That request is answered first, then the connection
        // closes: the client learns the later bytes were not served, as with any connection lost.
        if unanswered > 0 && !reading {
            refused = true
            if responding || unanswered > 0 { closeAfterResponse = true } else { context.close(promise: nil) }
            return
        }
        // The decoder closes the channel right after this returns: answer now, synchronously.
        refuse(context: context, message: "malformed HTTP request")
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200:
            responding = true
            closeAfterResponse =
                refused
                || (head.headers.contains(name: "connection") && head.headers["connection"].contains { $0.lowercased().contains("close") })
        case .end:
            responding = false
            if reading { answeredEarly = true } else { unanswered = max(0, unanswered - 1) }
            if closeAfterResponse {
                // Hummingbird keeps reading after a response that says `Connection: close` (it honours only the
                // request's header): close once the response is out.
                let promise = promise ?? context.eventLoop.makePromise()
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                promise.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
                context.write(data, promise: promise)
                return
            }
        default: break
        }
        context.write(data, promise: promise)
    }

    private func refuse(context: ChannelHandlerContext, message: String) {
        refuse(context: context, StatusError(.invalidRequest, message))
    }

    /// Answers `error` with the SPEC body (unless a response is under way) and closes the connection. A request refused
    /// while its body was being read has its body stream failed first: a route already waiting for it (or one, like a
    /// `DELETE`, that reads it whole before acting, ``WholeRequestMiddleware``) must not act on part of a request.
    private func refuse(context: ChannelHandlerContext, _ error: StatusError) {
        guard !refused else { return }
        refused = true
        if reading { context.fireErrorCaught(error) }
        if !responding {
            let body = ByteBuffer(string: (try? JSONCoding.string(ErrorBody(error: error))) ?? "")
            let headers = HTTPHeaders([
                ("Connection", "close"), ("Content-Type", "application/json; charset=utf-8"), ("Content-Length", String(body.readableBytes)),
            ])
            let status = HTTPResponseStatus(statusCode: error.code.httpStatus)
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.close(promise: nil)
    }

    /// Refuses a `CONNECT` (statusd is no proxy) with 400 and the SPEC error body. NIO's response encoder drops the body
    /// of any response to `CONNECT` (RFC 9112 forbids one on a 2xx only), so the response goes out as bytes, written
    /// by ``RequestDeadlineHandler`` in front of the encoder.
    private func refuseConnect(context: ChannelHandlerContext) {
        guard !refused else { return }
        refused = true
        let body = (try? JSONCoding.string(ErrorBody(error: StatusError(.invalidRequest, "CONNECT is not supported")))) ?? ""
        let response =
            "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        context.triggerUserOutboundEvent(RequestDeadlineHandler.WriteAsIs(bytes: ByteBuffer(string: response)), promise: nil)
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
