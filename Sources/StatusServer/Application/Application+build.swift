import Hummingbird
import HummingbirdWebSocket
import Logging
import RedisClient
import ServiceLifecycle

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
    let fanout = FanoutService(index: index, services: services, logger: logger)
    DeviceGateway(services: services, index: index, fanout: fanout).register(on: router)
    var app = Application(
        router: router,
        server: .http1WebSocketUpgrade(
            webSocketRouter: router,
            configuration: .init(http1: .init(additionalChannelHandlers: [UpgradeRejectionHandler()]), ws: .init(maxFrameSize: 1 << 16))
        ),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "statusd"),
        logger: logger
    )
    app.addServices(
        redis,
        ScriptPreloader(redis: redis, scripts: services.scripts, logger: logger),
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
