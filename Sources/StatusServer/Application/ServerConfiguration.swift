import Foundation
import RedisClient

/// How one statusd node runs.
public struct ServerConfiguration: Sendable {
    /// The address to listen on.
    public var host: String
    /// The port to listen on (0 picks a free one).
    public var port: Int
    /// Where Redis is.
    public var redis: RedisConfiguration
    /// The admin API's bearer key.
    public var adminKey: String
    /// This node's unique id (its lease and its devices are filed under it).
    public var nodeId: String
    /// How long a node's lease lasts without renewal; survivors clean up after a node silent for this long.
    public var nodeLeaseSeconds: Int
    /// Outbound messages a device may have queued before it is disconnected as too slow.
    public var sessionQueueLimit: Int

    /// Creates a configuration.
    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        redis: RedisConfiguration,
        adminKey: String,
        nodeId: String = "node-" + UUID().uuidString.prefix(8).lowercased(),
        nodeLeaseSeconds: Int = 15,
        sessionQueueLimit: Int = 1024
    ) {
        self.host = host
        self.port = port
        self.redis = redis
        self.adminKey = adminKey
        self.nodeId = nodeId
        self.nodeLeaseSeconds = nodeLeaseSeconds
        self.sessionQueueLimit = sessionQueueLimit
    }
}
