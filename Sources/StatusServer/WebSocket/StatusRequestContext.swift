import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

/// The request context of every route: Hummingbird's core storage, the WebSocket handler slot, and the connection's
/// channel (device sessions watch its raw inbound bytes for heartbeats).
struct StatusRequestContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.webSocket = .init()
        self.channel = source.channel
    }
}
