import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

extension StatusResponder {
    /// This responder as a connection's handler calls it on the node's own listener (``NodeListener``): each request
    /// gets its context, an unexpected error becomes a 500, and the response gets the `Date` and `Server` headers, as
    /// Hummingbird's application does for the connections of its own server (which the tests run).
    func connectionResponder(logger: Logger) -> HTTPChannelHandler.Responder {
        { request, writer, channel in
            var logger = logger
            logger[metadataKey: "hb.request.id"] = .stringConvertible(RequestID())
            let context = StatusRequestContext(source: .init(channel: channel, logger: logger))
            let response: Response
            do {
                response = try await respond(to: request, context: context)
            } catch let error as HTTPParserError {
                // The connection's loop answers a parse error itself.
                throw error
            } catch {
                logger.debug("Unrecognised Error", metadata: ["error.type": "\(error)"])
                response = Response(status: .internalServerError)
            }
            try await hot.write(response, to: writer)
        }
    }
}
