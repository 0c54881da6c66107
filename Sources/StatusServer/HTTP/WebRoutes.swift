import Foundation
import Hummingbird
import StatusCore

/// The files statusd serves to people and tools rather than to apps: the OpenAPI document of its HTTP API
/// (`/openapi.json`, SPEC §9), the AsyncAPI document of the device WebSocket's frames (`/asyncapi.json`), the browser
/// client (`/client/statusd.js`) and the admin console (`/console`).
///
/// They are embedded in the binary (the EmbedResources build plugin) and read once at start. None of them holds data: the console asks the operator
/// for the admin key and sends it only to this server's admin API.
struct WebRoutes: Sendable {
    /// One served file.
    struct File: Sendable {
        let resource: String
        let contentType: String
        var extraHeaders: HTTPFields = [:]
    }

    /// Route path → file.
    static let files: [(path: String, file: File)] = [
        // Public and without data: pages and tools of any origin may load them (a module script from another origin
        // needs CORS).
        (
            "openapi.json",
            File(resource: "openapi.json", contentType: "application/json; charset=utf-8", extraHeaders: [.accessControlAllowOrigin: "*"])
        ),
        (
            "asyncapi.json",
            File(resource: "asyncapi.json", contentType: "application/json; charset=utf-8", extraHeaders: [.accessControlAllowOrigin: "*"])
        ),
        (
            "client/statusd.js",
            File(resource: "statusd.js", contentType: "text/javascript; charset=utf-8", extraHeaders: [.accessControlAllowOrigin: "*"])
        ),
        (
            "console",
            File(
                resource: "console.html",
                contentType: "text/html; charset=utf-8",
                extraHeaders: [
                    // Everything is inline and talks only to this server; nothing may frame the page that holds the key.
                    .contentSecurityPolicy:
                        "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
                        + "connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
                    .init("X-Content-Type-Options")!: "nosniff",
                    .init("Referrer-Policy")!: "no-referrer",
                ]
            )
        ),
    ]

    /// The bytes of a resource file.
    static func load(_ resource: String) throws -> ByteBuffer {
        guard let bytes = EmbeddedResources.bytes("Resources/\(resource)") else {
            throw StatusError(.internalError, "resource \(resource) is not embedded in the binary")
        }
        return ByteBuffer(bytes: bytes)
    }

    func register(on router: Router<some RequestContext>) throws {
        for (path, file) in Self.files {
            let body = try Self.load(file.resource)
            var headers: HTTPFields = [.contentType: file.contentType, .cacheControl: "no-cache"]
            headers.append(contentsOf: file.extraHeaders)
            let fixedHeaders = headers
            router.get(RouterPath(path)) { _, _ in
                Response(status: .ok, headers: fixedHeaders, body: .init(byteBuffer: body))
            }
        }
    }
}
