import Logging
import RedisClient
import StatusCore

/// How the parts of a node fit together, worked out once by ``buildApplication(configuration:logger:)``: the
/// repositories (``StorageLayer``), the operations over them, and a factory for each route group and service. Nothing
/// receives this value: every route group, the fan-out, the housekeeping, the gateway and the webhook dispatcher is
/// given exactly what it uses through its initialiser, here.
struct NodeWiring: Sendable {
    let configuration: ServerConfiguration
    let storage: StorageLayer
    let auth: Authenticator
    let bus: EventBus
    /// The app-wide writes that follow a presence change, and how long the log of recent changes keeps an entry.
    let recorder: ChangeRecorder
    let webhooks: WebhookQueue
    let operations: StatusOperations
    let presence: PresenceOperations
    let tokens: TokenService
    let nodes: NodeRegistry
    /// The node's lease as the housekeeping renews it, which the fan-out's bus-gap audit also asks.
    let lease: SharedLease
    /// The node's own metrics, handed to every part that records into them; `/metrics` serves their registry.
    let metrics: NodeMetrics
    let logger: Logger

    /// The parts of a node over `redis`, recording into `metrics` (its Redis client's counters included, when it was
    /// made with ``NodeMetrics/redisClient``). Tests that build only some parts of a node get a registry of their own.
    init(configuration: ServerConfiguration, redis: RedisClient, metrics: NodeMetrics = NodeMetrics(), logger: Logger) throws {
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        let storage = try StorageLayer(redis: redis, configuration: configuration.nodeRedis, clock: configuration.clock)
        self.storage = storage
        auth = Authenticator(adminKey: configuration.adminKey, apps: storage.apps)
        let bus = EventBus(publisher: storage.busPublisher, logger: logger)
        self.bus = bus
        let recorder = ChangeRecorder(
            onlineIndex: OnlineIndexWriter(statuses: storage.statuses),
            leaseSeconds: configuration.nodeLeaseSeconds,
            logger: logger
        )
        self.recorder = recorder
        let webhooks = WebhookQueue(
            queue: storage.webhookQueues,
            index: storage.webhookIndex,
            maxPendingPerApp: configuration.webhookDispatch.maxPendingPerApp,
            clock: configuration.clock,
            metrics: metrics,
            logger: logger
        )
        self.webhooks = webhooks
        operations = StatusOperations(
            queries: storage.statusQueries,
            subscriptions: storage.subscriptions,
            listings: storage.listings,
            users: storage.users,
            statuses: storage.statuses,
            bus: bus,
            webhooks: webhooks,
            recorder: recorder,
            clock: configuration.clock
        )
        presence = PresenceOperations(
            statuses: storage.statuses,
            recorder: recorder,
            bus: bus,
            heartbeats: storage.heartbeats,
            webhooks: webhooks,
            nodeId: configuration.nodeId,
            clock: configuration.clock,
            logger: logger
        )
        tokens = TokenService(apps: storage.apps, users: storage.users, cache: VerifiedTokenCache(), clock: configuration.clock)
        nodes = NodeRegistry(
            store: storage.nodes,
            nodeId: configuration.nodeId,
            leaseSeconds: configuration.nodeLeaseSeconds,
            clock: configuration.clock
        )
        lease = SharedLease(
            NodeLeaseState(period: nodes.renewalPeriod, lease: .seconds(configuration.nodeLeaseSeconds))
        )
    }

    var apps: AppRegistry { storage.apps }
    var users: UserDirectory { storage.users }
    var statuses: StatusRepository { storage.statuses }

    // MARK: Route groups

    func healthRoutes() -> HealthRoutes {
        HealthRoutes(probe: storage.health, drain: configuration.drain, registry: metrics.registry, auth: auth)
    }

    func adminRoutes() -> AdminRoutes {
        AdminRoutes(auth: auth, apps: apps, bus: bus)
    }

    func adminOverviewRoutes(index: FanoutIndex, activity: AppActivity) -> AdminOverviewRoutes {
        AdminOverviewRoutes(
            auth: auth,
            apps: apps,
            listings: storage.listings,
            nodeId: configuration.nodeId,
            index: index,
            clock: configuration.clock,
            activity: activity
        )
    }

    func userRoutes() -> UserRoutes {
        UserRoutes(auth: auth, users: users, statuses: statuses, presence: presence, tokens: tokens, bus: bus)
    }

    func statusRoutes() -> StatusRoutes {
        StatusRoutes(auth: auth, operations: operations, presence: presence, users: users)
    }

    // MARK: Services

    func fanout(index: FanoutIndex, work: DeviceWorkQueue) -> FanoutService {
        FanoutService(
            index: index,
            apps: apps,
            statuses: statuses,
            relations: storage.relations,
            deviceRecords: storage.deviceRecords,
            recentChanges: storage.recentChanges,
            recorder: recorder,
            feed: storage.busFeed,
            work: work,
            inboxLimit: configuration.busInboxLimit,
            lease: lease,
            clock: configuration.clock,
            metrics: metrics,
            logger: logger
        )
    }

    func snapshot(index: FanoutIndex) -> SessionSnapshot {
        SessionSnapshot(statuses: statuses, listings: storage.listings, index: index, scopeLimit: configuration.snapshotScopeLimit)
    }

    func gateway(
        index: FanoutIndex,
        fanout: FanoutService,
        work: DeviceWorkQueue,
        connects: DeviceWorkQueue,
        limits: DeviceConnectionStateMachine.Limits,
        activity: AppActivity
    ) -> DeviceGateway {
        let snapshot = snapshot(index: index)
        var admissionLimits = UpgradeAdmission.Limits()
        admissionLimits.maxPending = max(1, configuration.maxPendingConnects)
        let resume = SessionResume(
            recentChanges: storage.recentChanges,
            statuses: statuses,
            snapshot: snapshot,
            index: index,
            relations: storage.relations,
            logReadLimit: configuration.resumeLogReadLimit,
            logger: logger
        )
        return DeviceGateway(
            tokens: tokens,
            apps: apps,
            nodes: nodes,
            presence: presence,
            resume: resume,
            snapshot: snapshot,
            requests: DeviceRequestHandler(apps: apps, operations: operations, presence: presence, metrics: metrics),
            index: index,
            fanout: fanout,
            work: work,
            connects: connects,
            limits: limits,
            activity: activity,
            drain: configuration.drain,
            admission: admissionLimits,
            clock: configuration.clock,
            metrics: metrics,
            logger: logger
        )
    }

    func housekeeping(index: FanoutIndex, fanout: FanoutService, accuracy: PresenceAccuracy) -> HousekeepingService {
        HousekeepingService(
            nodes: nodes,
            lease: lease,
            apps: apps,
            presence: presence,
            deviceRecords: storage.deviceRecords,
            heartbeats: storage.heartbeats,
            expiries: ExpirySweeper(
                dueIndex: .expiries(store: storage.dueIndexes, apps: apps),
                clock: configuration.clock,
                statuses: statuses,
                webhooks: webhooks,
                recentChanges: storage.recentChanges,
                recorder: recorder
            ),
            graces: GraceSweeper(
                dueIndex: .graces(store: storage.dueIndexes, apps: apps),
                clock: configuration.clock,
                statuses: statuses,
                presence: presence
            ),
            tick: configuration.housekeepingInterval,
            index: index,
            fanout: fanout,
            accuracy: accuracy,
            metrics: metrics,
            clock: configuration.clock,
            logger: logger
        )
    }

    func webhookDispatcher() -> WebhookDispatcher {
        WebhookDispatcher(
            apps: apps,
            webhooks: webhooks,
            legacy: storage.legacyWebhooks,
            settings: configuration.webhookDispatch,
            clock: configuration.clock,
            metrics: metrics,
            logger: logger
        )
    }
}
