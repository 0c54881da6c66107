import RedisClient

/// What `/readyz` asks Redis (SPEC §9): whether it answers a `PING`. A type of its own so that the health routes get
/// this one question, not the client.
struct HealthProbe: Sendable {
    let redis: RedisClient

    /// Throws when Redis does not answer.
    func ping() async throws {
        _ = try await redis.send("PING")
    }
}
