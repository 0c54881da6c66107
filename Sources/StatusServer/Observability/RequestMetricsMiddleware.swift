import CoreMetrics
import Dispatch
import Hummingbird
import Synchronization

/// Per-route HTTP metrics (SPEC §9): the same series as Hummingbird's `MetricsMiddleware` (`hb_requests`,
/// `hb_request_errors`, `http_server_request_duration`, `http_server_active_requests`), recorded when the handler has
/// produced its response.
///
/// Hummingbird's middleware records them after the body is written, by wrapping every body in a closure. A wrapped
/// body loses Hummingbird's single-write path: the head, the body and the end of each response became three writes
/// to the connection, each flushed, which is two `write` system calls where one does. Every statusd route answers
/// with a body it has built in memory, so the time to produce the response is the time of the request but for the
/// last write of a few hundred bytes, and the response stays one write.
///
/// The series go to the node's own registry (``NodeMetrics/factory``), not to the process's metrics system.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: RequestMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        let method = RequestMetrics.seriesMethod(request.method)
        let active = metrics.active(method)
        active.increment()
        defer { active.decrement() }
        do {
            let response = try await next(request, context)
            metrics.answered(route: context.endpointPath ?? "Unknown", method: method, status: response.status, since: start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            metrics.failed(route: context.endpointPath ?? "NotFound", method: method, status: status)
            throw error
        }
    }
}

/// The handles of the per-route series, made once per node and shared by the router's ``RequestMetricsMiddleware`` and
/// the hot routes (``HotRoutes``), which record into the same series.
final class RequestMetrics: Sendable {
    private let cache: RequestMetricsCache

    init(factory: any MetricsFactory) {
        cache = RequestMetricsCache(factory: factory)
    }

    /// The gauge of requests in flight of a method (a ``seriesMethod(_:)`` label).
    func active(_ method: HTTPRequest.Method) -> Meter {
        cache.active(method)
    }

    /// Counts a request answered with `status`, and its duration since `start` (`DispatchTime` nanoseconds).
    func answered(route: String, method: HTTPRequest.Method, status: HTTPResponse.Status, since start: UInt64) {
        let series = cache.route(RouteKey(route: route, method: method, status: status))
        series.requests.increment()
        series.duration.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - start))
    }

    /// Counts a request that failed without an answer.
    func failed(route: String, method: HTTPRequest.Method, status: HTTPResponse.Status) {
        let series = cache.route(RouteKey(route: route, method: method, status: status))
        series.requests.increment()
        series.errors.increment()
    }

    /// The method as a series label: HTTP allows any token as a method, so methods statusd does not serve share one
    /// label, `_OTHER` (as OpenTelemetry's conventions name it), and a client cannot make new series.
    static func seriesMethod(_ method: HTTPRequest.Method) -> HTTPRequest.Method {
        switch method {
        case .get, .head, .post, .put, .delete, .patch, .options: method
        default: otherMethodLabel
        }
    }
}

/// The method label of methods statusd does not serve (made once: a generic type cannot hold a static constant).
private let otherMethodLabel = HTTPRequest.Method("_OTHER")!

/// The series of one route, method and status.
private struct RouteKey: Hashable, Sendable {
    var route: String
    var method: HTTPRequest.Method
    var status: HTTPResponse.Status
}

/// The metric handles of one ``RouteKey``, made once: a handle's creation goes through the metrics factory's own lock
/// and lookup, which is more work than the request's increment.
private struct RouteMetrics: Sendable {
    let requests: Counter
    let duration: CoreMetrics.Timer
    let errors: Counter

    init(_ key: RouteKey, factory: any MetricsFactory) {
        let dimensions = [
            ("http.route", key.route), ("http.request.method", key.method.description),
            ("http.response.status_code", key.status.code.description),
        ]
        requests = Counter(label: "hb.requests", dimensions: dimensions, factory: factory)
        duration = CoreMetrics.Timer(
            label: "http.server.request.duration",
            dimensions: dimensions,
            preferredDisplayUnit: TimeUnit.seconds,
            factory: factory
        )
        errors = Counter(
            label: "hb.request.errors",
            dimensions: [
                ("http.route", key.route), ("http.request.method", key.method.description),
                ("error.type", key.status.code.description),
            ],
            factory: factory
        )
    }
}

/// The handles made so far. Routes, methods and statuses are few (unknown paths share one route, "NotFound"), so the
/// cache stays small.
private final class RequestMetricsCache: Sendable {
    private let factory: any MetricsFactory
    private let routes = Mutex<[RouteKey: RouteMetrics]>([:])
    private let methods = Mutex<[HTTPRequest.Method: Meter]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func route(_ key: RouteKey) -> RouteMetrics {
        routes.withLock { routes in
            if let metrics = routes[key] { return metrics }
            let metrics = RouteMetrics(key, factory: factory)
            routes[key] = metrics
            return metrics
        }
    }

    func active(_ method: HTTPRequest.Method) -> Meter {
        methods.withLock { methods in
            if let meter = methods[method] { return meter }
            let meter = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", method.description)], factory: factory)
            methods[method] = meter
            return meter
        }
    }
}
