import Hummingbird

/// The request context of every route: Hummingbird's core storage.
struct StatusRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }
}
