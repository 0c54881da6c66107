import Hummingbird
import HummingbirdCore
import Logging
import RedisClient
import ServiceLifecycle
import StatusCore

/// Builds a statusd node: the HTTP and WebSocket router and the node's services, wired by ``NodeWiring``, with the
/// Redis client running as a service that starts before the server and stops after it. Tests call this too; run as a
/// service, the node listens with its own accept loop (``StatusNode``, ``NodeListener``).
///
/// The node's metrics (``NodeMetrics``) are made here and belong to this node alone: several nodes built in one
/// process count apart, and each one's `/metrics` shows its own counts.
public func buildApplication(configuration: ServerConfiguration, logger: Logger) throws -> some ApplicationProtocol {
    try buildNode(configuration: configuration, logger: logger)
}

/// The node ``buildApplication(configuration:logger:)`` returns, as its own type: the tests run it with its listener.
func buildNode(configuration: ServerConfiguration, logger: Logger) throws -> StatusNode {
    let metrics = NodeMetrics()
    let redis = RedisClient(configuration: configuration.nodeRedis, logger: logger, metrics: metrics.redisClient)
    let wiring = try NodeWiring(configuration: configuration, redis: redis, metrics: metrics, logger: logger)
    let index = FanoutIndex()
    let activity = AppActivity(metrics: metrics)
    let responder = try buildResponder(wiring: wiring, index: index, activity: activity, logger: logger)
    // Sessions' work runs where the node's tasks do: under `withNodeTaskExecutor` (the binary), on the event loop that
    // hands it over (a socket's, the bus connection's).
    let work = DeviceWorkQueue()
    let fanout = wiring.fanout(index: index, work: work)
    var limits = DeviceConnectionStateMachine.Limits()
    limits.backlogBytes = configuration.sessionBacklogBytes
    // Upgrades wait for their connect in a queue of their own, a few at a time (DeviceGateway.connects), with a bounded
    // share of each loop: all on the loops, a storm's connects held up the deliveries and the upgrades behind them
    // (docs/delivery.md).
    let connects = DeviceWorkQueue(
        concurrency: max(1, configuration.connectConcurrency),
        placement: .loopsUpTo(share: DeviceGateway.connectShareOfLoop)
    )
    let gateway = wiring.gateway(index: index, fanout: fanout, work: work, connects: connects, limits: limits, activity: activity)
    configuration.drain.attach { duration in await fanout.drainSessions(over: duration) }
    let hot = responder.hot
    let http = HTTP1Channel.Configuration(idleTimeout: .seconds(configuration.httpIdleTimeoutSeconds))
    let channel: @Sendable (@escaping HTTPChannelHandler.Responder) -> DeviceServerChannel = { responder in
        DeviceServerChannel(
            responder: hot.answeringFirst(responder),
            gateway: gateway,
            http: http,
            requestTimeout: .init(configuration.requestTimeout)
        )
    }
    var app = Application(
        responder: responder,
        server: HTTPServerBuilder { channel($0) },
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port),
            serverName: serverName,
            backlog: configuration.listenBacklog
        ),
        logger: logger
    )
    app.addServices(
        redis,
        wiring.storage.scriptPreloader(logger: logger),
        work,
        connects,
        fanout,
        wiring.housekeeping(index: index, fanout: fanout, accuracy: activity.accuracy),
        wiring.webhookDispatcher()
    )
    if let metricsPort = configuration.metricsPort {
        // The operator listener: `/metrics` without credentials, on its own address (SPEC §9).
        let metricsRouter = Router()
        MetricsRoutes(registry: metrics.registry).register(on: metricsRouter)
        app.addServices(
            Application(
                router: metricsRouter,
                configuration: .init(address: .hostname(configuration.metricsHost, port: metricsPort), serverName: "statusd-metrics"),
                logger: logger
            )
        )
    }
    return StatusNode(application: app, channel: channel, host: configuration.host, port: configuration.port)
}

/// The `Server` header of every response.
let serverName = "statusd"

/// What answers a node's HTTP requests: the router, with setSelfStatus and getUserStatus answered before it
/// (``HotRoutes``), both with the same metrics and error answers.
func buildResponder(wiring: NodeWiring, index: FanoutIndex, activity: AppActivity, logger: Logger) throws -> StatusResponder {
    let middleware = RouteMiddleware(metrics: wiring.metrics, activity: activity)
    let router = try buildRouter(wiring: wiring, index: index, activity: activity, middleware: middleware)
    let hot = HotRoutes(routes: wiring.statusRoutes(), middleware: middleware, logger: logger, serverName: serverName)
    return StatusResponder(router: router.buildResponder(), hot: hot)
}

/// Every HTTP route of a node (SPEC §7, §9) with its middleware. The OpenAPI document at `/openapi.json` describes
/// exactly these routes; a test reads ``Router/routes`` of this router to keep the two in step.
func buildRouter(
    wiring: NodeWiring,
    index: FanoutIndex,
    activity: AppActivity,
    middleware: RouteMiddleware? = nil
) throws -> Router<StatusRequestContext> {
    let router = Router(context: StatusRequestContext.self)
    (middleware ?? RouteMiddleware(metrics: wiring.metrics, activity: activity)).add(to: router)
    wiring.healthRoutes().register(on: router)
    wiring.adminRoutes().register(on: router)
    wiring.adminOverviewRoutes(index: index, activity: activity).register(on: router)
    wiring.userRoutes().register(on: router)
    wiring.statusRoutes().register(on: router)
    try WebRoutes().register(on: router)
    // The device WebSocket is upgraded before routing (``DeviceServerChannel``), on a connection's first request only; a
    // plain GET, or an upgrade asked for on a connection that already served a request, gets this answer. The
    // connection is closed after it: NIO's HTTP parser reads nothing more after a request asking for an upgrade.
    router.get(RouterPath(DeviceGateway.path)) { request, context -> Response in
        var response = try StatusError(.invalidRequest, "GET /v1/connect needs a WebSocket upgrade, on a new connection")
            .response(from: request, context: context)
        response.headers[.connection] = "close"
        return response
    }
    // Last, so that it wraps only the router's not-found answer.
    router.add(middleware: MethodNotAllowedMiddleware(routes: router.routes))
    return router
}
