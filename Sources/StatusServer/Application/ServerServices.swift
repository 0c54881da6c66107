import Hummingbird
import Logging
import RedisClient
import StatusCore

/// Everything a request handler or a device session needs, built once per node.
struct ServerServices: Sendable {
    let configuration: ServerConfiguration
    let redis: RedisClient
    let scripts: ScriptLibrary
    let apps: AppRegistry
    let auth: Authenticator
    let users: UserDirectory
    let statuses: StatusRepository
    let operations: StatusOperations
    let presence: PresenceOperations
    let tokens: TokenService
    let bus: EventBus
    let webhooks: WebhookQueue
    /// The app-wide writes that follow a presence change, and how long the log of recent changes keeps an entry.
    let recorder: ChangeRecorder
    let nodeDevices: NodeRegistry
    let logger: Logger
    /// Where the node reads its own time.
    var clock: any NodeClock { configuration.clock }

    init(configuration: ServerConfiguration, redis: RedisClient, logger: Logger) throws {
        self.configuration = configuration
        self.redis = redis
        self.logger = logger
        let scripts = try ScriptLibrary.load()
        self.scripts = scripts
        let clock = configuration.clock
        let apps = AppRegistry(redis: redis, scripts: scripts, clock: clock)
        self.apps = apps
        self.auth = Authenticator(adminKey: configuration.adminKey, apps: apps)
        let users = UserDirectory(redis: redis, scripts: scripts, clock: clock)
        self.users = users
        let statuses = StatusRepository(redis: redis, scripts: scripts, clock: clock)
        self.statuses = statuses
        let bus = EventBus(redis: redis, logger: logger)
        self.bus = bus
        let recorder = ChangeRecorder(
            onlineIndex: OnlineIndexWriter(statuses: statuses),
            leaseSeconds: configuration.nodeLeaseSeconds,
            logger: logger
        )
        self.recorder = recorder
        let webhooks = WebhookQueue(
            redis: redis,
            scripts: scripts,
            maxPendingPerApp: configuration.webhookDispatch.maxPendingPerApp,
            clock: clock,
            logger: logger
        )
        self.webhooks = webhooks
        self.operations = StatusOperations(
            redis: redis,
            scripts: scripts,
            users: users,
            statuses: statuses,
            bus: bus,
            webhooks: webhooks,
            recorder: recorder,
            clock: clock
        )
        self.presence = PresenceOperations(
            statuses: statuses,
            recorder: recorder,
            bus: bus,
            redis: redis,
            webhooks: webhooks,
            nodeId: configuration.nodeId,
            clock: clock,
            logger: logger
        )
        self.tokens = TokenService(apps: apps, users: users, cache: VerifiedTokenCache(), clock: clock)
        self.nodeDevices = NodeRegistry(redis: redis, nodeId: configuration.nodeId, leaseSeconds: configuration.nodeLeaseSeconds, clock: clock)
    }

    /// The app of the path, authenticated by its API key.
    func app(_ request: Request, _ context: some RequestContext) async throws -> AppRecord {
        try await auth.requireApp(request, appIdSegment: context.parameters.require("appId"))
    }

    /// The app and the userId of the path (percent-decoded once, then validated: SPEC §7 request hygiene).
    func user(_ request: Request, _ context: some RequestContext) async throws -> (AppRecord, String) {
        let app = try await app(request, context)
        return (app, try Identifiers.userId(pathSegment: context.parameters.require("userId")))
    }
}
