import Foundation
import RedisClient
import Testing

@testable import StatusServer

/// The fault the bus tests inject for real: a node's pub/sub connections killed with `CLIENT KILL`. A node names its
/// connections `statusd-<nodeId>` (``ServerConfiguration/nodeRedis``), so only the chosen node's are killed: the nodes
/// of other tests, running at the same time against the same Redis, keep their feeds.
enum BusFault {
    /// A fresh node id, to give the node whose connections a test kills (``naming(_:)``).
    static func nodeId(_ prefix: String) -> String {
        "\(prefix)-" + UUID().uuidString.prefix(8).lowercased()
    }

    /// Gives a node the id `nodeId` (`withStatusd(configure: BusFault.naming(id))`).
    static func naming(_ nodeId: String) -> (inout ServerConfiguration) -> Void {
        { $0.nodeId = nodeId }
    }

    /// Kills the pub/sub connections of the node `nodeId` on every master `redis` knows (the one server, or each master
    /// of a cluster, where shard subscriptions are spread); returns how many it killed.
    @discardableResult
    static func killBusConnections(of nodeId: String, using redis: RedisClient) async throws -> Int {
        let name = "name=statusd-\(nodeId)"
        var killed = 0
        for endpoint in try await redis.masterEndpoints() {
            let list = try await redis.send(["CLIENT", "LIST", "TYPE", "pubsub"], to: endpoint).string ?? ""
            for line in list.split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.contains(Substring(name)), let id = fields.first(where: { $0.hasPrefix("id=") })?.dropFirst(3) else { continue }
                if try await redis.send(["CLIENT", "KILL", "ID", String(id)], to: endpoint).int == 1 { killed += 1 }
            }
        }
        return killed
    }

    /// Kills the pub/sub connections of the node `nodeId` on the server `redis` is a client of and keeps the node from
    /// connecting them again while `body` runs: the server takes no more clients than it has once they are killed
    /// (`CONFIG SET maxclients`), so the node's feed stays down however fast it retries, while its command connections
    /// and `redis` go on. For a server of the test's own (``PrivateRedis``) only: every client of the server is held to
    /// the connections it has.
    static func holdingBusDown<Value>(of nodeId: String, using redis: RedisClient, _ body: () async throws -> Value) async throws -> Value {
        let limit = try await redis.send("CONFIG", "GET", "maxclients").array?.last?.string ?? "10000"
        // The limit is set before the kill, so that no connection made again in between is let in.
        let clients = (try await redis.send("CLIENT", "LIST").string ?? "").split(separator: "\n").count
        let feed = (try await redis.send("CLIENT", "LIST", "TYPE", "pubsub").string ?? "").split(separator: "\n")
            .filter { $0.split(separator: " ").contains("name=statusd-\(nodeId)") }
        _ = try await redis.send("CONFIG", "SET", "maxclients", String(clients - feed.count))
        #expect(try await killBusConnections(of: nodeId, using: redis) > 0)
        do {
            let value = try await body()
            _ = try await redis.send("CONFIG", "SET", "maxclients", limit)
            return value
        } catch {
            _ = try? await redis.send("CONFIG", "SET", "maxclients", limit)
            throw error
        }
    }
}
