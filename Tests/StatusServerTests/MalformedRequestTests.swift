import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import StatusCore
import Testing

@testable import StatusServer

/// Every malformed HTTP request is answered with the SPEC §7 error body and the connection closed, at once.
@Suite struct MalformedRequestTests {
    /// Feeds raw bytes to NIO's HTTP/1.1 server codec with ``MalformedRequestHandler`` behind the decoder, and returns
    /// what the server wrote, whether it closed, and the request parts that reached the rest of the pipeline.
    private func serve(_ bytes: [UInt8]) throws -> (response: String, closed: Bool, forwarded: [HTTPServerRequestPart]) {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8080)).wait()
        let encoder = HTTPResponseEncoder()
        try channel.pipeline.syncOperations.addHandler(encoder)
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes)))
        try MalformedRequestHandler.install(in: channel.pipeline.syncOperations)
        var buffer = channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        _ = try? channel.writeInbound(buffer)
        var forwarded: [HTTPServerRequestPart] = []
        while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) { forwarded.append(part) }
        var response = ""
        while let out = try channel.readOutbound(as: ByteBuffer.self) { response += String(buffer: out) }
        return (response, !channel.isActive, forwarded)
    }

    private func expectRefused(_ request: [UInt8], headIsBad: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let served = try serve(request)
        #expect(served.response.hasPrefix("HTTP/1.1 400"), "\(served.response)", sourceLocation: sourceLocation)
        #expect(served.closed, sourceLocation: sourceLocation)
        let body = served.response.components(separatedBy: "\r\n\r\n").dropFirst().joined()
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(body.utf8))
        #expect(json["error"]["code"].string == "INVALID_REQUEST", sourceLocation: sourceLocation)
        #expect(json["error"]["message"].string?.isEmpty == false, sourceLocation: sourceLocation)
        if headIsBad {
            #expect(!served.forwarded.contains { if case .head = $0 { true } else { false } }, sourceLocation: sourceLocation)
        }
    }

    @Test func nonASCIIBytesInThePath() throws {
        try expectRefused(Array("GET /v1/apps/".utf8) + [0xC3, 0xA9, 0xFF] + Array(" HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
    }

    @Test func aNulByteInAuthorization() throws {
        try expectRefused(Array("GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a".utf8) + [0] + Array("b\r\n\r\n".utf8))
    }

    @Test func chunkedTogetherWithContentLength() throws {
        let request = "POST /v1/apps HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"
        try expectRefused(Array(request.utf8))
    }

    @Test(arguments: [
        "GARBAGE\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "GET /healthz HTTP/1.1\r\nBad Header\r\n\r\n",
        "POST /v1/apps HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    ])
    func otherMalformedRequests(_ request: String) throws {
        try expectRefused(Array(request.utf8))
    }

    @Test func aMalformedBodyAfterAGoodHead() throws {
        try expectRefused(Array("POST /v1/apps HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".utf8), headIsBad: false)
    }

    /// RFC 9110: a header name is a token; every one of its punctuation characters is allowed, others refused.
    @Test func headerNamesWithEveryTokenCharacterPassAndOthersAreRefused() throws {
        let served = try serve(Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-a!#$%&'*+-.^_`|~9: v\r\n\r\n".utf8))
        #expect(served.response.isEmpty, "\(served.response)")
        #expect(!served.closed)
        for bad in ["X(a", "X@a", "X,a", "X/a", "X[a", "X{a", "X\"a"] {
            try expectRefused(Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\(bad): v\r\n\r\n".utf8))
        }
    }

    @Test func wellFormedRequestsPassThrough() throws {
        let served = try serve(Array("GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer abc\r\n\r\n".utf8))
        #expect(served.response.isEmpty)
        #expect(!served.closed)
        #expect(served.forwarded.count == 2)
    }

    @Test func expectContinueIsAnsweredAndTakenOffTheHead() throws {
        let served = try serve(Array("PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n".utf8))
        #expect(served.response == "HTTP/1.1 100 Continue\r\n\r\n")
        #expect(!served.closed)
        guard case .head(let head) = served.forwarded.first else {
            Issue.record("no head forwarded")
            return
        }
        #expect(!head.headers.contains(name: "expect"))
        // HTTP/1.0 clients get no interim answer (RFC 9110 §15.2); other expectations are refused.
        #expect(try serve(Array("PUT /x HTTP/1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n".utf8)).response.isEmpty)
        try expectRefused(Array("PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: something\r\n\r\n".utf8))
    }

    @Test func aContentLengthPast1MiBIs413AtOnce() throws {
        for expect in ["", "Expect: 100-continue\r\n"] {
            let served = try serve(Array("PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: \((1 << 20) + 1)\r\n\(expect)\r\n".utf8))
            #expect(served.response.hasPrefix("HTTP/1.1 413"), "\(served.response)")
            #expect(served.response.contains("PAYLOAD_TOO_LARGE"))
            #expect(served.closed)
            #expect(served.forwarded.isEmpty)
        }
        #expect(try serve(Array("PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: \(1 << 20)\r\n\r\n".utf8)).response.isEmpty)
    }

    @Test func anExpiredRequestIsAnswered408AndClosed() throws {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8080)).wait()
        try channel.pipeline.syncOperations.addHandler(HTTPResponseEncoder())
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes)))
        try MalformedRequestHandler.install(in: channel.pipeline.syncOperations)
        try channel.writeInbound(ByteBuffer(string: "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{"))
        channel.pipeline.fireUserInboundEventTriggered(RequestDeadlineHandler.Expired.timeout)
        var response = ""
        while let out = try channel.readOutbound(as: ByteBuffer.self) { response += String(buffer: out) }
        #expect(response.hasPrefix("HTTP/1.1 408"), "\(response)")
        #expect(response.contains(#"{"error":{"code":"REQUEST_TIMEOUT","#))
        #expect(!channel.isActive)
    }
}
