import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// A statusd node as ``buildApplication(configuration:logger:)`` makes it: Hummingbird's application (the responder,
/// the node's services, the server builder that HummingbirdTesting runs), run by the binary with the node's own
/// listener (``NodeListener``) in place of Hummingbird's server, so that a device connection costs no task of its own.
/// Both serve connections with the same ``DeviceServerChannel``.
struct StatusNode: ApplicationProtocol {
    typealias Responder = StatusResponder

    let application: Application<StatusResponder>
    /// The connection handler for a given HTTP responder.
    let channel: @Sendable (@escaping HTTPChannelHandler.Responder) -> DeviceServerChannel
    let host: String
    let port: Int
    /// Also called with the listening socket once it is bound, after the application's own `onServerRunning` (the
    /// tests learn the node's port from it).
    var onListening: @Sendable (any Channel) async -> Void = { _ in }

    var responder: StatusResponder { application.responder }
    var server: HTTPServerBuilder { application.server }
    var configuration: ApplicationConfiguration { application.configuration }
    var logger: Logger { application.logger }
    var services: [any Service] { application.services }
    var eventLoopGroup: any EventLoopGroup { application.eventLoopGroup }

    func onServerRunning(_ channel: any Channel) async {
        await application.onServerRunning(channel)
    }

    /// The node's services, then its listener: a service group stops its services in reverse order, so on a graceful
    /// shutdown the listener stops first and the services (the Redis client last) after it, as in Hummingbird's
    /// application.
    func run() async throws {
        let application = self.application
        let listener = NodeListener(
            child: channel(application.responder.connectionResponder(logger: logger)),
            host: host,
            port: port,
            backlog: configuration.backlog,
            group: eventLoopGroup,
            logger: logger,
            onRunning: { [onListening] channel in
                await application.onServerRunning(channel)
                await onListening(channel)
            }
        )
        let group = ServiceGroup(configuration: .init(services: services + [listener], logger: logger))
        try await group.run()
    }
}
