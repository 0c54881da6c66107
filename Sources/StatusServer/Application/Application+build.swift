import Hummingbird
import HummingbirdCore
import Logging
import RedisClient
import ServiceLifecycle
import StatusCore

/// Builds a statusd node: the HTTP and WebSocket router over the shared services, with the Redis client running as a
/// service that starts before the server and stops after it. Tests call this too.
public func buildApplication(configuration: ServerConfiguration, logger: Logger) throws -> some ApplicationProtocol {
    let redis = RedisClient(configuration: configuration.redis, logger: logger)
    let services = try ServerServices(configuration: configuration, redis: redis, logger: logger)
    let index = FanoutIndex()
    let activity = AppActivity()
    let router = try buildRouter(services: services, index: index, activity: activity)
    let work = DeviceWorkQueue()
    let fanout = FanoutService(index: index, services: services, work: work, inboxLimit: configuration.busInboxLimit, logger: logger)
    var limits = DeviceConnectionStateMachine.Limits()
    limits.backlogBytes = configuration.sessionBacklogBytes
    let gateway = DeviceGateway(services: services, index: index, fanout: fanout, work: work, limits: limits, activity: activity)
    let http = HTTP1Channel.Configuration(idleTimeout: .seconds(configuration.httpIdleTimeoutSeconds))
    var app = Application(
        router: router,
        server: HTTPServerBuilder { responder in
            DeviceServerChannel(responder: responder, gateway: gateway, http: http, requestTimeout: .init(configuration.requestTimeout))
        },
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "statusd"),
        logger: logger
    )
    app.addServices(
        redis,
        ScriptPreloader(redis: redis, scripts: services.scripts, logger: logger),
        work,
        fanout,
        HousekeepingService(services: services, index: index, fanout: fanout, accuracy: activity.accuracy, logger: logger),
        WebhookDispatcher(services: services, settings: configuration.webhookDispatch)
    )
    return app
}

/// Every HTTP route of a node (SPEC §7, §9) with its middleware. The OpenAPI document at `/openapi.json` describes
/// exactly these routes; a test reads ``Router/routes`` of this router to keep the two in step.
func buildRouter(services: ServerServices, index: FanoutIndex, activity: AppActivity) throws -> Router<StatusRequestContext> {
    let router = Router(context: StatusRequestContext.self)
    let registry = MetricsBootstrap.registry()
    router.add(middleware: RequestMetricsMiddleware())
    router.add(middleware: ErrorMiddleware(activity: activity))
    router.add(middleware: EmptyPathSegmentMiddleware())
    router.add(middleware: WholeRequestMiddleware())
    HealthRoutes(services: services, registry: registry).register(on: router)
    AdminRoutes(services: services).register(on: router)
    AdminOverviewRoutes(services: services, index: index, activity: activity).register(on: router)
    UserRoutes(services: services).register(on: router)
    StatusRoutes(services: services).register(on: router)
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

/// Loads the Lua scripts at start (`SCRIPT LOAD`); a Redis that is down now gets them later through the
/// `NOSCRIPT` reload of `EVALSHA`.
struct ScriptPreloader: Service {
    let redis: RedisClient
    let scripts: ScriptLibrary
    let logger: Logger

    func run() async throws {
        do {
            try await redis.loadScripts(scripts.all)
        } catch {
            logger.warning("could not preload scripts", metadata: ["error": "\(error)"])
        }
        await checkEncodingThreshold()
        try? await gracefulShutdown()
    }

    /// Warns when Redis keeps sorted sets of 200 members in the large encoding (docs/scaling.md: about 22 KB a user
    /// instead of 6). A Redis that refuses `CONFIG GET` (some managed services) is not checked.
    private func checkEncodingThreshold() async {
        guard let reply = try? await redis.send("CONFIG", "GET", "zset-max-listpack-entries").array, reply.count == 2,
            let entries = reply[1].int, entries < 256
        else { return }
        logger.warning(
            "redis keeps sorted sets over \(entries) members in the large encoding: set zset-max-listpack-entries 256 (deploy/redis.conf)"
        )
    }
}
