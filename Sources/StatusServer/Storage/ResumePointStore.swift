import RedisClient

/// Where a device's resume point waits for its reconnect (SPEC §7): written by the departure script
/// (`devices_remove.lua`) with the departure itself, read here when a device presents its `resume` token.
struct ResumePointStore: Sendable {
    let redis: RedisClient

    /// The resume point stored for the device, nil when there is none (expired, never written) or it does not parse.
    func point(appId: String, userId: String, deviceId: String) async throws -> ResumePoint? {
        let key = RedisKeys(appId: appId).user(userId).resume(deviceId)
        return try await redis.send("GET", key).string.flatMap(ResumePoint.init(stored:))
    }
}
