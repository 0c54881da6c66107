import Foundation
import Hummingbird
import StatusCore

/// Reading JSON request bodies within SPEC §1's 1 MiB limit.
///
/// Every body is first checked by ``StrictJSON`` (strict RFC 8259 in UTF-8, nesting within
/// ``StrictJSON/maxBodyDepth``, only the members its type allows): one linear pass before any decoder runs, so no body
/// can cost recursion or CPU in proportion to its depth, and `JSONDecoder`'s leniency (trailing commas, UTF-16 bodies,
/// junk inside members nobody reads) never decides what a request means.
enum RequestBody {
    /// The largest body accepted (SPEC §1); larger is 413 `PAYLOAD_TOO_LARGE`.
    static let maxBytes = 1 << 20

    /// Decodes the body as `T`; malformed JSON, unknown members or wrong types are `INVALID_REQUEST`.
    static func decode<T: JSONRequestBody>(_ type: T.Type, from request: Request) async throws -> T {
        guard let value = try await decodeIfPresent(type, from: request) else { throw missingBody }
        return value
    }

    /// ``decode(_:from:)`` for a ``JSONFastPath`` type (chosen by the compiler, so the hot routes pay no dynamic cast).
    static func decode<T: JSONRequestBody & JSONFastPath>(_ type: T.Type, from request: Request) async throws -> T {
        guard let value = try await decodeIfPresent(type, from: request) else { throw missingBody }
        return value
    }

    /// Decodes the body as `T`, or nil when the body is empty.
    static func decodeIfPresent<T: JSONRequestBody>(_ type: T.Type, from request: Request) async throws -> T? {
        guard let buffer = try await collect(request) else { return nil }
        try buffer.withUnsafeReadableBytes { bytes throws(StatusError) in try StrictJSON.validate(bytes, members: T.members) }
        return try decodeWithFoundation(T.self, from: buffer)
    }

    /// ``decodeIfPresent(_:from:)`` for a ``JSONFastPath`` type: a body in its plain shape is read without
    /// `JSONDecoder`, once the strict check passed.
    static func decodeIfPresent<T: JSONRequestBody & JSONFastPath>(_ type: T.Type, from request: Request) async throws -> T? {
        guard let buffer = try await collect(request) else { return nil }
        let fast = try buffer.withUnsafeReadableBytes { bytes throws(StatusError) -> T? in
            try StrictJSON.validate(bytes, members: T.members)
            return T.fastDecode(bytes)
        }
        if let fast { return fast }
        return try decodeWithFoundation(T.self, from: buffer)
    }

    /// For a route that takes no body: an empty body or `{}` passes; anything else is `INVALID_REQUEST` (SPEC §7:
    /// malformed JSON and unknown members are refused on every route).
    static func requireNone(_ request: Request) async throws {
        guard let buffer = try await collect(request) else { return }
        try buffer.withUnsafeReadableBytes { bytes throws(StatusError) in
            try StrictJSON.validate(bytes, members: noMembers)
            guard bytes.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{") else {
                throw StatusError(.invalidRequest, "this route takes no body, or an empty object")
            }
        }
    }

    private static let noMembers = StrictJSON.Members([])

    private static let missingBody = StatusError(.invalidRequest, "a JSON body is required")

    /// The body within ``maxBytes``, or nil when it is empty.
    private static func collect(_ request: Request) async throws -> ByteBuffer? {
        var request = request
        let buffer = try await request.collectBody(upTo: maxBytes)
        return buffer.readableBytes > 0 ? buffer : nil
    }

    private static func decodeWithFoundation<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> T {
        do {
            return try JSONCoding.decoder.decode(T.self, from: Data(buffer: buffer))
        } catch {
            throw StatusError(.invalidRequest, "malformed JSON or wrong field types")
        }
    }
}
