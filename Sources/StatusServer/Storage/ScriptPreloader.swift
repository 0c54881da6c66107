import Logging
import RedisClient
import ServiceLifecycle

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
        await checkEncodingThreshold()
        try? await gracefulShutdown()
    }

    /// Warns when Redis keeps sorted sets of 200 members in the large encoding (docs/scaling.md: about 22 KB a user
    /// instead of 6). A Redis that refuses `CONFIG GET` (some managed services) is not checked.
    private func checkEncodingThreshold() async {
        guard let reply = try? await redis.send("CONFIG", "GET", "zset-max-listpack-entries").array, reply.count == 2,
            let entries = reply[1].int, entries < 256
        else { return }
        logger.warning(
            "redis keeps sorted sets over \(entries) members in the large encoding: set zset-max-listpack-entries 256 (deploy/redis.conf)"
        )
    }
}
