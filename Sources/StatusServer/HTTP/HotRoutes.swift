import Dispatch
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// setSelfStatus and getUserStatus (``HotRoute``) answered straight from the server's connection handler, without the
/// per-request work around the router: the request's logger, id and context, the route trie, and the middleware
/// chain's nested calls.
///
/// Why: these two operations are most of an app backend's calls, and that work was an eighth to a sixth of statusd's
/// CPU per call (medians of six alternated runs: 68 → 59.5 µs per setSelfStatus, 73.5 → 60 per getUserStatus;
/// docs/benchmarks.md, "Hot routes before the router").
///
/// Each step the router's middleware takes for a request is taken here too, in the same order and with the same shared
/// parts: the request counted in its route's metric series (``RequestMetrics``), its body read whole
/// before anything acts on it (as ``WholeRequestMiddleware`` does), the same handler (``StatusRoutes``), a failure
/// answered and counted by ``ErrorAnswers``; and the `Date` and `Server` headers Hummingbird's application adds to
/// every response. The empty-segment check has nothing to refuse: a hot route has no empty segment.
struct HotRoutes: Sendable {
    let routes: StatusRoutes
    let middleware: RouteMiddleware
    /// Logs the unexpected failures (500) of hot routes.
    let logger: Logger
    /// The `Server` header.
    let serverName: String
    let dates = HTTPDateHeader()

    /// The answer to a request of `route`.
    func respond(_ route: HotRoute, to request: Request) async -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        let method = RequestMetrics.seriesMethod(request.method)
        let active = middleware.metrics.active(method)
        active.increment()
        defer { active.decrement() }
        let appId = String(route.appIdSegment)
        let response: Response
        do {
            var request = request
            _ = try await request.collectBody(upTo: RequestBody.maxBytes)
            let userId = String(route.userIdSegment)
            switch route.operation {
            case .setSelfStatus:
                response = try await routes.setSelfStatus(request, appIdSegment: appId, userIdSegment: userId).response()
            case .getUserStatus:
                response = try await routes.getUserStatus(request, appIdSegment: appId, userIdSegment: userId).response()
            }
        } catch {
            response = middleware.errors.response(to: error, appIdSegment: appId, path: request.uri.path, logger: logger)
        }
        middleware.metrics.answered(route: route.routePath, method: method, status: response.status, since: start)
        return response
    }

    /// The server's responder with the hot routes answered first; every other request goes to `responder`
    /// (Hummingbird's application: its router).
    func answeringFirst(_ responder: @escaping HTTPChannelHandler.Responder) -> HTTPChannelHandler.Responder {
        { request, writer, channel in
            guard let route = HotRoute.match(method: request.method, path: request.uri.path) else {
                return try await responder(request, writer, channel)
            }
            try await write(await respond(route, to: request), to: writer)
        }
    }

    /// Writes a response written without Hummingbird's application (a hot route's, or any on the node's own listener),
    /// with the `Date` and `Server` headers the application adds.
    func write(_ response: Response, to writer: consuming ResponseWriter) async throws {
        var response = response
        response.headers[.date] = dates.current
        response.headers[.server] = serverName
        do {
            try await writer.write(response: response.head, body: response.body)
        } catch is HTTPParserError {
            // The connection's loop answers a parse error itself with a 400; one arriving while this response was
            // written must close the connection instead of answering twice (as Hummingbird's application does).
            throw ResponseWriteFailed()
        }
    }

    /// A response could not be written: the connection is closed.
    struct ResponseWriteFailed: Error {}
}
