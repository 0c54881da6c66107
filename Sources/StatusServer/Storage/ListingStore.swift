import RedisClient

/// The app-wide user indexes read in id order: every user (``RedisKeys/users``) and the online ones (the online
/// index, ``RedisKeys/online``, written by ``OnlineIndexWriter``). Listings (SPEC §7 `GET /users`), snapshots of an
/// app-wide scope (SPEC §10.6) and the admin overview read them here, a page at a time.
struct ListingStore: Sendable {
    let redis: RedisClient

    /// Which index to read.
    enum Index: Sendable {
        case users
        case online
    }

    /// Up to `limit` userIds of the index after `after` (exclusive; from the start when nil), in id order.
    func page(appId: String, _ index: Index, after: String?, limit: Int) async throws -> [String] {
        let keys = RedisKeys(appId: appId)
        let key = index == .online ? keys.online : keys.users
        let start = after.map { "(" + $0 } ?? "-"
        return try await redis.send("ZRANGEBYLEX", key, start, "+", "LIMIT", "0", String(limit)).array?.compactMap(\.string) ?? []
    }

    /// Up to `limit` userIds online with one of `roles` (``RedisKeys/online(role:)``) after `after` (exclusive; from the
    /// start when nil), in id order: the next `limit` of each role's index, merged. Reads at most `limit` per role.
    func onlinePage(appId: String, roles: Set<String>, after: String?, limit: Int) async throws -> [String] {
        guard !roles.isEmpty else { return [] }
        let keys = RedisKeys(appId: appId)
        let start = after.map { "(" + $0 } ?? "-"
        let replies = try await redis.pipeline(
            roles.sorted().map { ["ZRANGEBYLEX", keys.online(role: $0), start, "+", "LIMIT", "0", String(limit)] }
        )
        let merged = Set(replies.flatMap { $0.array?.compactMap(\.string) ?? [] })
        return Array(merged.sorted().prefix(limit))
    }

    /// How many users of the app are online, on every node.
    func onlineCount(appId: String) async throws -> Int {
        Int(try await redis.send("ZCARD", RedisKeys(appId: appId).online).int ?? 0)
    }
}
