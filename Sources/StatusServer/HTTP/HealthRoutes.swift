import Hummingbird
import Prometheus
import StatusCore

/// SPEC §9: `/healthz` (process up), `/readyz` (Redis reachable, the node not draining) and `/metrics` (Prometheus text).
///
/// `/metrics` on the public listener asks for the admin key: the node's counts (devices connected, users online here)
/// move when anyone connects, an invisible user included, so they are the operator's, not the world's. An operator
/// listener (``ServerConfiguration/metricsPort``, ``MetricsRoutes``) serves them without credentials, for scrapers that
/// cannot send one.
struct HealthRoutes: Sendable {
    /// Whether Redis answers, for `/readyz`.
    let probe: HealthProbe
    /// A draining node is not ready, whatever Redis says (SPEC §9).
    let drain: NodeDrain
    let registry: PrometheusCollectorRegistry
    /// Checks the admin key `/metrics` asks for.
    let auth: Authenticator

    /// The health answer.
    struct Health: Encodable, Sendable {
        var status: String
    }

    func register(on router: Router<some RequestContext>) {
        router.get("healthz") { _, _ in
            JSONResponse(Health(status: "ok"))
        }
        router.get("metrics") { request, _ in
            try auth.requireAdmin(request)
            return MetricsRoutes.response(registry)
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

/// The operator listener's one route: `/metrics` without credentials, on an address only operators reach
/// (`--metrics-host`, `--metrics-port`).
struct MetricsRoutes: Sendable {
    let registry: PrometheusCollectorRegistry

    func register(on router: Router<some RequestContext>) {
        router.get("metrics") { _, _ in MetricsRoutes.response(registry) }
    }

    /// The registry in Prometheus text.
    static func response(_ registry: PrometheusCollectorRegistry) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer()))
        )
    }
}
