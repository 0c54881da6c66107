import Hummingbird
import StatusCore

/// SPEC §9: `/healthz` (process up) and `/readyz` (Redis reachable).
struct HealthRoutes: Sendable {
    let services: ServerServices

    /// The health answer.
    struct Health: Encodable, Sendable {
        var status: String
    }

    func register(on router: Router<some RequestContext>) {
        router.get("healthz") { _, _ in
            JSONResponse(Health(status: "ok"))
        }
        router.get("readyz") { _, _ in
            do {
                _ = try await services.redis.send("PING")
                return JSONResponse(Health(status: "ready"))
            } catch {
                throw StatusError(.unavailable, "Redis is not reachable")
            }
        }
    }
}
