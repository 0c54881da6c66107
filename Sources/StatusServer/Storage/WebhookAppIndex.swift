import RedisClient

/// The apps that have queued webhook events (``RedisKeys/webhookApps``), which every node's dispatcher goes round
/// instead of one shared stream: an app joins when an event lands in its empty queue and leaves when a dispatcher finds
/// its queue empty. The index is in its own slot, apart from the queues: an app is added after its event is queued,
/// and removed only if its score did not move since the dispatcher read it, so no event is ever left unindexed by a
/// race; an addition lost to a failure is repaired by ``WebhookDispatchSettings/reindexEvery``.
struct WebhookAppIndex: Sendable {
    let redis: RedisClient
    let scripts: ScriptLibrary

    private var runner: ScriptRunner { ScriptRunner(redis: redis, scripts: scripts) }

    /// Adds the app (again), with a new score.
    func add(_ appId: String) async throws {
        _ = try await runner.run(WebhookIndexAdd.self, keys: .init(), arguments: .init(appId: appId))
    }

    /// Every indexed app with its score, in index order.
    func apps() async throws -> [(appId: String, score: String)] {
        let values = try await redis.send("ZRANGE", RedisKeys.webhookApps, "0", "-1", "WITHSCORES").array ?? []
        var apps: [(appId: String, score: String)] = []
        apps.reserveCapacity(values.count / 2)
        var index = 0
        while index + 1 < values.count {
            if let appId = values[index].string, let score = values[index + 1].string ?? values[index + 1].int.map({ String($0) }) {
                apps.append((appId, score))
            }
            index += 2
        }
        return apps
    }

    /// Removes the app unless it was added again since its score was read as `score`; true when removed.
    @discardableResult
    func remove(_ appId: String, seenScore score: String) async throws -> Bool {
        try await runner.run(WebhookIndexRemove.self, keys: .init(), arguments: .init(appId: appId, seenScore: score)).value
    }
}
