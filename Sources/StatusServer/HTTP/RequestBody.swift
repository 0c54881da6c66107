import Foundation
import Hummingbird
import StatusCore

/// Reading JSON request bodies within SPEC §1's 1 MiB limit.
enum RequestBody {
    /// The largest body accepted (SPEC §1); larger is 413 `PAYLOAD_TOO_LARGE`.
    static let maxBytes = 1 << 20

    /// Decodes the body as `T`; malformed JSON or wrong types are `INVALID_REQUEST`.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T {
        guard let value = try await decodeIfPresent(type, from: request) else { throw missingBody }
        return value
    }

    /// ``decode(_:from:)`` for a ``JSONFastPath`` type (chosen by the compiler, so the hot routes pay no dynamic cast).
    static func decode<T: Decodable & JSONFastPath>(_ type: T.Type, from request: Request) async throws -> T {
        guard let value = try await decodeIfPresent(type, from: request) else { throw missingBody }
        return value
    }

    /// Decodes the body as `T`, or nil when the body is empty. Any body nesting deeper than
    /// ``JSONNesting/maxBodyDepth`` is refused by a linear scan before the decoder runs, so no body can cost recursion
    /// or CPU in proportion to its depth.
    static func decodeIfPresent<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T? {
        guard let buffer = try await collect(request) else { return nil }
        return try decodeWithFoundation(T.self, from: buffer)
    }

    /// ``decodeIfPresent(_:from:)`` for a ``JSONFastPath`` type: a body in its plain shape is read without
    /// `JSONDecoder`. The fast path accepts flat shapes only (its scanner never nests), so the depth scan is needed
    /// only after it.
    static func decodeIfPresent<T: Decodable & JSONFastPath>(_ type: T.Type, from request: Request) async throws -> T? {
        guard let buffer = try await collect(request) else { return nil }
        if let value = buffer.withUnsafeReadableBytes({ T.fastDecode($0) }) {
            return value
        }
        return try decodeWithFoundation(T.self, from: buffer)
    }

    private static let missingBody = StatusError(.invalidRequest, "a JSON body is required")

    /// The body within ``maxBytes``, or nil when it is empty.
    private static func collect(_ request: Request) async throws -> ByteBuffer? {
        var request = request
        let buffer = try await request.collectBody(upTo: maxBytes)
        return buffer.readableBytes > 0 ? buffer : nil
    }

    private static func decodeWithFoundation<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> T {
        try buffer.withUnsafeReadableBytes { bytes throws(StatusError) in try JSONNesting.check(bytes) }
        do {
            return try JSONCoding.decoder.decode(T.self, from: Data(buffer: buffer))
        } catch {
            throw StatusError(.invalidRequest, "malformed JSON or wrong field types")
        }
    }
}
