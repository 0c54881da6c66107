import Foundation
import Hummingbird
import StatusCore

/// Reading JSON request bodies within SPEC §1's 1 MiB limit.
enum RequestBody {
    /// The largest body accepted (SPEC §1); larger is 413 `PAYLOAD_TOO_LARGE`.
    static let maxBytes = 1 << 20

    /// Decodes the body as `T`; malformed JSON or wrong types are `INVALID_REQUEST`.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T {
        guard let value = try await decodeIfPresent(type, from: request) else {
            throw StatusError(.invalidRequest, "a JSON body is required")
        }
        return value
    }

    /// Decodes the body as `T`, or nil when the body is empty. A body of a ``JSONFastPath`` type in its plain shape is
    /// read without `JSONDecoder`. Any other body nesting deeper than ``JSONNesting/maxBodyDepth`` is refused by a
    /// linear scan before the decoder runs, so no body can cost recursion or CPU in proportion to its depth.
    static func decodeIfPresent<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T? {
        var request = request
        let buffer = try await request.collectBody(upTo: maxBytes)
        guard buffer.readableBytes > 0 else { return nil }
        // The fast path accepts flat shapes only (its scanner never nests), so the depth scan is needed only after it.
        if let fast = T.self as? any JSONFastPath.Type,
            let value = buffer.withUnsafeReadableBytes({ fast.fastDecode($0) }) as? T
        {
            return value
        }
        try buffer.withUnsafeReadableBytes { bytes throws(StatusError) in try JSONNesting.check(bytes) }
        do {
            return try JSONCoding.decoder.decode(T.self, from: Data(buffer: buffer))
        } catch {
            throw StatusError(.invalidRequest, "malformed JSON or wrong field types")
        }
    }
}
