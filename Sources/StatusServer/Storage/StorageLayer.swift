import Logging
import RedisClient

/// Every repository of a node over one Redis client, built once by ``buildApplication(configuration:logger:)``.
/// Storage is the only module that sends Redis commands: the types here (and the scripts' runner) are the one door.
/// This value is wiring, not a dependency: nothing receives it whole, each consumer gets the repositories it uses
/// through its initialiser.
struct StorageLayer: Sendable {
    let redis: RedisClient
    let scripts: ScriptLibrary
    /// The deadlines of script calls on Redis's clock, measured by the lease renewals.
    let fence: WriteFence
    let runner: ScriptRunner
    let apps: AppRegistry
    let users: UserDirectory
    let statuses: StatusRepository
    /// The reads of statuses a call makes with its gate (rate limit, activity, subscription marks), one round trip each.
    let statusQueries: StatusQueryStore
    let subscriptions: SubscriptionStore
    let relations: RelationsLoader
    let deviceRecords: DeviceRecordStore
    let recentChanges: RecentChangesLog
    let listings: ListingStore
    let heartbeats: HeartbeatStore
    let nodes: NodeStore
    let dueIndexes: DueIndexStore
    let webhookQueues: WebhookAppQueue
    let webhookIndex: WebhookAppIndex
    let legacyWebhooks: LegacyWebhookStore
    let busPublisher: BusPublisher
    let busFeed: BusFeed
    let health: HealthProbe

    init(redis: RedisClient, configuration: RedisConfiguration, clock: any NodeClock) throws {
        self.redis = redis
        // A script call may be applied until its caller gives up on it: the command timeout (SPEC §7).
        let fence = WriteFence(budget: configuration.commandTimeout)
        self.fence = fence
        let scripts = try ScriptLibrary.load(fence: fence)
        self.scripts = scripts
        let runner = ScriptRunner(redis: redis, scripts: scripts)
        self.runner = runner
        apps = AppRegistry(redis: redis, scripts: scripts, clock: clock)
        users = UserDirectory(redis: redis, scripts: scripts, clock: clock)
        statuses = StatusRepository(redis: redis, scripts: scripts, clock: clock)
        statusQueries = StatusQueryStore(runner: runner, statuses: statuses)
        subscriptions = SubscriptionStore(runner: runner, users: users)
        relations = RelationsLoader(redis: redis)
        deviceRecords = DeviceRecordStore(redis: redis)
        recentChanges = RecentChangesLog(redis: redis)
        listings = ListingStore(redis: redis)
        heartbeats = HeartbeatStore(redis: redis)
        nodes = NodeStore(redis: redis, fence: fence)
        dueIndexes = DueIndexStore(runner: runner)
        webhookQueues = WebhookAppQueue(redis: redis, scripts: scripts)
        webhookIndex = WebhookAppIndex(redis: redis, scripts: scripts)
        legacyWebhooks = LegacyWebhookStore(redis: redis)
        busPublisher = BusPublisher(redis: redis)
        busFeed = BusFeed(configuration: configuration, redis: redis)
        health = HealthProbe(redis: redis)
    }

    /// The service that loads the scripts when the node starts.
    func scriptPreloader(logger: Logger) -> ScriptPreloader {
        ScriptPreloader(redis: redis, scripts: scripts, logger: logger)
    }
}
