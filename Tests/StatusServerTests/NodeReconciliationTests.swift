import Foundation
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// A departure the node could not write when the socket closed (Redis unreachable then) is filed later by the node's
/// housekeeping, so the user does not stay `online` for as long as the node lives.
@Suite(.redis) struct NodeReconciliationTests {
    @Test func aListedDeviceWithoutASessionIsFiledOffline() async throws {
        let nodeId = "node-" + UUID().uuidString.prefix(8).lowercased()
        let fixedNode: (inout ServerConfiguration) -> Void = { configuration in
            configuration.nodeId = nodeId
            configuration.nodeLeaseSeconds = 3
        }
        try await withStatusd(.router, configure: fixedNode) { api in
            let app = try await api.createApp(config: premiumConfig)
            try await app.createUsers(["alice"])
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let redis = RedisClient(configuration: try TestRedis.configuration, logger: logger)
            // The state a closed socket leaves when its departure could not be written: the device still recorded as
            // connected through this node, the user online, the device still in the node's list.
            let user = "st:{\(app.appId):alice}"
            _ = try await redis.send("HSET", "\(user):devices", "d1", #"{"p":"web","n":"\#(nodeId)","c":"ghost","k":"ws"}"#)
            _ = try await redis.send("HSET", "\(user):status", "t", "online", "v", "1", "cs", "here")
            _ = try await redis.send("SADD", "st:node:{\(nodeId)}:devices", "\(app.appId)\nalice\nd1\nghost")
            // Filed offline, then taken off the node's list (the next step of the same reconciliation).
            var status = JSONValue.null
            var listed: [RedisValue]? = nil
            for _ in 0..<40 {
                status = try await app.call(.post, "/status/query", ["userIds": ["alice"]]).body["statuses"][0]
                listed = try await redis.send("SMEMBERS", "st:node:{\(nodeId)}:devices").array
                if status["statusType"].string == "offline", listed?.isEmpty == true { break }
                try await Task.sleep(for: .milliseconds(250))
            }
            #expect(status["statusType"].string == "offline")
            #expect(!status.has("customStatus"))
            #expect(status["version"].int == 2)
            #expect(listed?.isEmpty == true)
            await redis.close()
        }
    }
}
