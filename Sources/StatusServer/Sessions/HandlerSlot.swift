/// Where a session's channel handler is (``DeviceSession/channelHandler``): not made yet, made, or gone for good.
///
/// The handler is made on the session's event loop the first time something there needs it, instead of by the connect:
/// a connect runs on the concurrency pool, and making a handler (which is not `Sendable`) there would cost it a trip to
/// the event loop and back before it could go on. Once gone (the channel closed, or the connect was given up), it is
/// never made again: a late delivery or kick finds no handler, and nothing holds the session any more.
enum HandlerSlot<Handler: AnyObject> {
    case notMade
    case made(Handler)
    case gone

    /// The handler, made by `make` on first use (nil from `make` leaves the slot as it was); nil once gone.
    mutating func handler(making make: () -> Handler?) -> Handler? {
        switch self {
        case .made(let handler):
            return handler
        case .gone:
            return nil
        case .notMade:
            guard let handler = make() else { return nil }
            self = .made(handler)
            return handler
        }
    }

    /// Lets go of the handler for good.
    mutating func release() {
        self = .gone
    }
}
