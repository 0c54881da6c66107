import RedisClient

/// Reads a user's relationships (subscriptions, friends, blocks either way) in one round trip.
struct RelationsLoader: Sendable {
    let redis: RedisClient

    func load(_ key: AppUser) async throws -> Relations {
        let user = RedisKeys(appId: key.appId).user(key.userId)
        let replies = try await redis.pipeline([
            ["ZRANGE", user.subscriptions, "0", "-1"],
            ["SMEMBERS", user.friends],
            ["SUNION", user.blocks, user.blockedBy],
        ])
        func set(_ index: Int) -> Set<String> { Set(replies[index].array?.compactMap(\.string) ?? []) }
        return Relations(subscriptions: set(0), friends: set(1), blocked: set(2))
    }
}
