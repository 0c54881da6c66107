import Hummingbird

/// A JSON response written with ``JSONOutput`` (status objects and query results), for the routes where
/// Foundation's encoder dominated the profile.
struct EncodedJSONResponse: ResponseGenerator {
    let bytes: [UInt8]
    var status: HTTPResponse.Status = .ok

    init(_ value: some JSONWritable, status: HTTPResponse.Status = .ok) {
        self.bytes = value.jsonBytes
        self.status = status
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        response()
    }

    /// The response, for a caller without a request context (the hot routes, ``HotRoutes``).
    func response() -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }
}
