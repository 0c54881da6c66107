import Hummingbird
import Prometheus
import StatusCore

/// SPEC §9: `/healthz` (process up), `/readyz` (Redis reachable, the node not draining) and `/metrics` (Prometheus text).
struct HealthRoutes: Sendable {
    /// Whether Redis answers, for `/readyz`.
    let probe: HealthProbe
    /// A draining node is not ready, whatever Redis says (SPEC §9).
    let drain: NodeDrain
    let registry: PrometheusCollectorRegistry

    /// The health answer.
    struct Health: Encodable, Sendable {
        var status: String
    }

    func register(on router: Router<some RequestContext>) {
        router.get("healthz") { _, _ in
            JSONResponse(Health(status: "ok"))
        }
        router.get("metrics") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer()))
            )
        }
        router.get("readyz") { _, _ in
            if drain.isDraining { throw StatusError(.unavailable, "the node is shutting down") }
            do {
                try await probe.ping()
                return JSONResponse(Health(status: "ready"))
            } catch {
                throw StatusError(.unavailable, "Redis is not reachable")
            }
        }
    }
}
