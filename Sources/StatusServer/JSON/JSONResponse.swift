import Foundation
import Hummingbird

/// A JSON response body encoded with statusd's encoder.
struct JSONResponse<Value: Encodable & Sendable>: ResponseGenerator {
    let value: Value
    var status: HTTPResponse.Status = .ok

    init(_ value: Value, status: HTTPResponse.Status = .ok) {
        self.value = value
        self.status = status
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        response(status: status)
    }

    /// Builds the response; an encoding failure (not expected for these types) becomes an empty 500.
    func response(status: HTTPResponse.Status) -> Response {
        guard let data = try? JSONCoding.encoder.encode(value) else { return Response(status: .internalServerError) }
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}
