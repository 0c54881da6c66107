import Hummingbird

/// The application's responder: the hot routes (``HotRoutes``) answered before the router, everything else routed.
///
/// A node's server answers the hot routes before this responder is reached (``HotRoutes/answeringFirst(_:)``); this
/// answers them the same way for a caller of the application's responder itself (an embedder, and the tests that run
/// requests through it without a socket), so that those go through the same code as the server's requests.
struct StatusResponder: HTTPResponder {
    typealias Context = StatusRequestContext

    let router: RouterResponder<StatusRequestContext>
    let hot: HotRoutes

    func respond(to request: Request, context: StatusRequestContext) async throws -> Response {
        guard let route = HotRoute.match(method: request.method, path: request.uri.path) else {
            return try await router.respond(to: request, context: context)
        }
        return await hot.respond(route, to: request)
    }
}
