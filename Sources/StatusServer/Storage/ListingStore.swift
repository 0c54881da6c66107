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

    /// How many users of the app are online, on every node.
    func onlineCount(appId: String) async throws -> Int {
        Int(try await redis.send("ZCARD", RedisKeys(appId: appId).online).int ?? 0)
    }
}
