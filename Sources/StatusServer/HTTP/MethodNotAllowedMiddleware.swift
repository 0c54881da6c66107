import Hummingbird
import StatusCore

/// Answers a request for a route that exists with another method by 405 `METHOD_NOT_ALLOWED` and an `Allow` header
/// (RFC 9110 §15.5.6), instead of the router's 404: the path is right, the method is not.
///
/// Added to the router after every route, so it wraps only the router's not-found answer and costs nothing on the
/// routes themselves.
struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {
    /// One route template: its path components (`nil` for a `{parameter}`) and its methods.
    private struct Template: Sendable {
        var components: [String?]
        var methods: [HTTPRequest.Method]
    }

    private let templates: [Template]

    /// Reads the router's routes (``Router/routes``) as they are now.
    init(routes: [Router<Context>.RouteDescription]) {
        var byPath: [String: Template] = [:]
        for route in routes {
            let path = route.path.description
            let components = path.split(separator: "/").map { $0.hasPrefix("{") ? nil : String($0) }
            byPath[path, default: Template(components: components, methods: [])].methods.append(route.method)
        }
        templates = Array(byPath.values)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let allowed = allowedMethods(for: request.uri.path)
            guard !allowed.isEmpty else { throw error }
            var response = try StatusError(.methodNotAllowed, "\(request.method) is not allowed here").response(from: request, context: context)
            response.headers[.allow] = allowed.map(\.rawValue).sorted().joined(separator: ", ")
            return response
        }
    }

    /// The methods of the routes whose template matches `path`.
    private func allowedMethods(for path: String) -> Set<HTTPRequest.Method> {
        let segments = path.split(separator: "/")
        var methods = Set<HTTPRequest.Method>()
        for template in templates where template.components.count == segments.count {
            if zip(template.components, segments).allSatisfy({ component, segment in component.map { $0 == segment } ?? true }) {
                methods.formUnion(template.methods)
            }
        }
        return methods
    }
}
