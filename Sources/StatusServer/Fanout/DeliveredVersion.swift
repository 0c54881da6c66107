/// The version of a user's status a node delivered last (``FanoutIndex``), and the prune pass it was delivered in.
struct DeliveredVersion: Sendable {
    var version: Int64
    var pass: UInt64
}
