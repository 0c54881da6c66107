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
    let router = Router(context: StatusRequestContext.self)
    let registry = MetricsBootstrap.registry()
    router.add(middleware: MetricsMiddleware())
    router.add(middleware: ErrorMiddleware())
    HealthRoutes(services: services, registry: registry).register(on: router)
    AdminRoutes(services: services).register(on: router)
    UserRoutes(services: services).register(on: router)
    StatusRoutes(services: services).register(on: router)
    let index = FanoutIndex()
    let work = DeviceWorkQueue()
    let fanout = FanoutService(index: index, services: services, work: work, inboxLimit: configuration.busInboxLimit, logger: logger)
    var limits = DeviceConnectionStateMachine.Limits()
    limits.backlogBytes = configuration.sessionBacklogBytes
    let gateway = DeviceGateway(services: services, index: index, fanout: fanout, work: work, limits: limits)
    router.get(RouterPath(DeviceGateway.path)) { _, _ -> Response in
        throw StatusError(.invalidRequest, "GET /v1/connect needs a WebSocket upgrade")
    }
    let http = HTTP1Channel.Configuration(idleTimeout: .seconds(configuration.httpIdleTimeoutSeconds))
    var app = Application(
        router: router,
        server: HTTPServerBuilder { responder in
            DeviceServerChannel(responder: responder, gateway: gateway, http: http)
        },
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "statusd"),
        logger: logger
    )
    app.addServices(
        redis,
        ScriptPreloader(redis: redis, scripts: services.scripts, logger: logger),
        work,
        fanout,
        HousekeepingService(services: services, index: index, logger: logger),
        WebhookDispatcher(services: services)
    )
    return app
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
        try? await gracefulShutdown()
    }
}
