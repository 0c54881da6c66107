import NIOCore

/// How the loader reaches a connected device from outside its event loop: each call hops onto the device's loop once.
struct DeviceLink: Sendable {
    let handler: NIOLoopBound<DeviceHandler>

    /// Writes a request frame on the device's WebSocket.
    func send(_ text: String) {
        let handler = handler
        handler.eventLoop.execute { handler.value.sendText(text) }
    }

    /// Closes the connection; the device reconnects unless the run is stopping.
    func drop() {
        let handler = handler
        handler.eventLoop.execute { handler.value.drop() }
    }
}
