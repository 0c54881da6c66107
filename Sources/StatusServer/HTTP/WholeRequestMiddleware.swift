import Hummingbird

/// Reads every request whole, within SPEC §1's 1 MiB, before any route acts on it (SPEC §7: a refused request changes
/// nothing). Routes that take no body would otherwise run as soon as the head arrived: a `DELETE` whose chunked body
/// turns out malformed was answered 400 after the deletion had been made. Collecting costs nothing for a request
/// without a body, and the routes that decode theirs read the buffer collected here.
struct WholeRequestMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var request = request
        // A request refused mid-body (malformed, too slow, too large) fails its body stream
        // (``MalformedRequestHandler``), so this throws and nothing acts on what arrived.
        _ = try await request.collectBody(upTo: RequestBody.maxBytes)
        return try await next(request, context)
    }
}
