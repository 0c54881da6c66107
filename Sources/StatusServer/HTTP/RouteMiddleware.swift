import Hummingbird

/// What every route runs in (SPEC §7, §9), made once per node: the request metrics and the error answers are shared
/// by the router's middleware and the hot routes (``HotRoutes``), so a request counts in the same series and a failure
/// is answered alike whichever way it came.
struct RouteMiddleware: Sendable {
    let metrics: RequestMetrics
    let errors: ErrorAnswers

    init(metrics: NodeMetrics, activity: AppActivity) {
        self.metrics = RequestMetrics(factory: metrics.factory)
        self.errors = ErrorAnswers(activity: activity, metrics: metrics)
    }

    /// Adds the router's middleware, outermost first: metrics, errors, empty path segments, the whole body read.
    func add(to router: Router<StatusRequestContext>) {
        router.add(middleware: RequestMetricsMiddleware(metrics: metrics))
        router.add(middleware: ErrorMiddleware(answers: errors))
        router.add(middleware: EmptyPathSegmentMiddleware())
        router.add(middleware: WholeRequestMiddleware())
    }
}
