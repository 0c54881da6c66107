import Hummingbird
import StatusCore

/// Refuses a path with an empty segment (`/users//status`, a trailing `/`) before its handler runs (SPEC §7 request
/// hygiene).
///
/// Hummingbird's router skips empty segments, so `PUT /v1/apps/a/users//status` would otherwise run
/// `PUT /users/{userId}` for a user named `status`. Under `/v1/` every segment is an id or a fixed name, so an empty
/// one is an id that is missing: `400 INVALID_USER_ID`. Elsewhere (`//healthz`) the path names no route: `404`.
/// Added to the router first, so that it wraps every route and the not-found answer, and looks at the path as sent.
struct EmptyPathSegmentMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The target as sent (the path and query), read where it is stored: this runs for every request.
        guard let target = request.head.path, Self.hasEmptySegment(target) else { return try await next(request, context) }
        if target.utf8.starts(with: "/v1/".utf8) {
            throw StatusError(.invalidUserId, "the path has an empty segment")
        }
        throw StatusError(.notFound, "no such route")
    }

    /// Whether the path of `target` (up to its query) has two slashes in a row or ends in a slash (the root `/` aside).
    static func hasEmptySegment(_ target: String) -> Bool {
        var previousWasSlash = false
        var count = 0
        for byte in target.utf8 {
            if byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            count += 1
            let isSlash = byte == UInt8(ascii: "/")
            if isSlash && previousWasSlash { return true }
            previousWasSlash = isSlash
        }
        return previousWasSlash && count > 1
    }
}
