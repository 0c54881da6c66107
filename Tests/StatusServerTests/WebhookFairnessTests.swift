import Foundation
import Logging
import Prometheus
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.7 "one app cannot slow or break another", for webhooks: per-app queues, fair turns, per-app bounds, and
/// queues that die with their app. Real sockets: a receiver that accepts and never answers, one that refuses, and a
/// real HTTP receiver. Serialized, because delays are asserted.
@Suite(.redis, .serialized) struct WebhookFairnessTests {
    @Test func quietAppIsDeliveredWithinASecondWhileANoisyAppsReceiversHangAndRefuse() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "webhook-fairness"))
        let hanging = try DeadReceiver(.hanging)
        let refusing = try DeadReceiver(.refusing)
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            try await withStatusd { api in
                let noisy = try await api.createApp(config: WebhookTests.webhookConfig(hanging.url))
                let failing = try await api.createApp(config: WebhookTests.webhookConfig(refusing.url))
                let quiet = try await api.createApp(config: WebhookTests.webhookConfig(url))
                try await quiet.createUsers(["vic"])
                // A burst for each noisy app: far more than every delivery slot of the node.
                for index in 0..<300 {
                    try await WebhookTests.enqueue(redis, appId: noisy.appId, body: WebhookTests.eventBody(appId: noisy.appId, deviceId: "n\(index)"))
                    try await WebhookTests.enqueue(
                        redis,
                        appId: failing.appId,
                        body: WebhookTests.eventBody(appId: failing.appId, deviceId: "f\(index)")
                    )
                }
                try await Task.sleep(for: .milliseconds(300))

                var delays: [Duration] = []
                for index in 0..<8 {
                    let sent = ContinuousClock.now
                    try await WebhookTests.login(quiet, "vic", "v\(index)")
                    _ = try await receiver.event(timeout: .seconds(5)) { $0["deviceId"].string == "v\(index)" }
                    let arrived = try #require(receiver.requests.first { $0.json["deviceId"].string == "v\(index)" }).at
                    delays.append(arrived - sent)
                    try await Task.sleep(for: .milliseconds(250))
                }
                let slowest = try #require(delays.max())
                #expect(slowest < .seconds(1), "quiet app's delivery delays: \(delays)")
                print("quiet app delivery delays with a noisy app hanging: \(delays.map { "\($0.inMilliseconds) ms" })")
                // The noisy apps were still stuck all along: most of their events are queued, none was dropped.
                let queue = WebhookAppQueue(redis: redis, scripts: try ScriptLibrary.load())
                #expect(try await queue.count(noisy.appId) > 250)
                #expect(try await queue.count(failing.appId) == 300)
                #expect(receiver.requests.allSatisfy { $0.json["appId"].string == quiet.appId })
            }
        }
        await redis.close()
    }

    @Test func anAppsUndeliveredEventsAreBoundedOldestDroppedFirstAndCounted() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "webhook-fairness"))
        let refusing = try DeadReceiver(.refusing)
        let appId = try await withStatusd { api in try await api.createApp(config: WebhookTests.webhookConfig(refusing.url)).appId }
        // A node's services without its dispatcher: nothing is delivered, the queue only fills.
        var logger = Logger(label: "webhook-fairness")
        logger.logLevel = .error
        var configuration = ServerConfiguration(redis: try TestRedis.configuration, adminKey: "unused")
        configuration.webhookDispatch.maxPendingPerApp = 5
        let wiring = try NodeWiring(configuration: configuration, redis: redis, logger: logger)
        let app = try await wiring.apps.require(appId)
        for index in 0..<12 {
            await wiring.webhooks.enqueue(
                app: app,
                userId: "u",
                deviceId: "d\(index)",
                platform: "web",
                action: ("login", "register"),
                statusType: .online
            )
        }
        let keys = RedisKeys(appId: appId)
        let entries = try await redis.send("XRANGE", keys.webhookStream, "-", "+").array ?? []
        let devices = entries.compactMap { entry -> String? in
            guard let fields = entry.array?.last?.array, let body = fields.count > 1 ? fields[1].string : nil else { return nil }
            return (try? JSONDecoder().decode(JSONValue.self, from: Data(body.utf8)))?["deviceId"].string
        }
        #expect(devices == ["d7", "d8", "d9", "d10", "d11"], "the newest five stay")
        #expect(try await redis.send("ZCARD", keys.webhookDue).int == 5)
        // The wiring's own registry: only this queue's drops are in it.
        #expect(Self.counter(wiring.metrics.registry, #"statusd_webhook_deliveries_total{outcome="dropped"}"#) == 7)
        #expect(try await redis.send("ZSCORE", RedisKeys.webhookApps, appId).string != nil, "the app is indexed")
        _ = try await withStatusd { api in try await api.admin(.delete, "/v1/apps/\(appId)") }
        await redis.close()
    }

    @Test func deletedAppsQueuedEventsDieWithItAndNeverReachTheAppCreatedAgain() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "webhook-fairness"))
        let hanging = try DeadReceiver(.hanging)
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            try await withStatusd { api in
                let appId = "wh-reborn-" + UUID().uuidString.prefix(8).lowercased()
                _ = try await api.createApp(appId: appId, config: WebhookTests.webhookConfig(hanging.url))
                let oldGeneration = try await redis.send("HGET", RedisKeys(appId: appId).app, "createdAt").string ?? ""
                #expect(!oldGeneration.isEmpty)
                for index in 0..<50 {
                    try await WebhookTests.enqueue(
                        redis,
                        appId: appId,
                        body: WebhookTests.eventBody(appId: appId, deviceId: "old\(index)"),
                        generation: oldGeneration
                    )
                }
                let queue = WebhookAppQueue(redis: redis, scripts: try ScriptLibrary.load())
                #expect(try await queue.count(appId) == 50)

                #expect(try await api.admin(.delete, "/v1/apps/\(appId)").status == 204)
                let keys = RedisKeys(appId: appId)
                #expect(try await redis.send("EXISTS", keys.webhookStream, keys.webhookDue, keys.webhookAttempts).int == 0)

                let reborn = try await api.createApp(appId: appId, config: WebhookTests.webhookConfig(url))
                // An event of the old app that was in flight across the deletion (queued again by a late write) is
                // told apart by its generation and dropped.
                try await WebhookTests.enqueue(
                    redis,
                    appId: appId,
                    body: WebhookTests.eventBody(appId: appId, deviceId: "old-late"),
                    generation: oldGeneration
                )
                try await reborn.createUsers(["zoe"])
                try await WebhookTests.login(reborn, "zoe", "new")
                _ = try await receiver.event { $0["deviceId"] == "new" }
                try await Task.sleep(for: .seconds(1))
                #expect(receiver.requests.map { $0.json["deviceId"].string ?? "" } == ["new"])
                #expect(try await queue.count(appId) == 0)
            }
        }
        await redis.close()
    }

    /// The value of one sample line of the registry's Prometheus text (0 when absent).
    static func counter(_ registry: PrometheusCollectorRegistry, _ sample: String) -> Int {
        for line in registry.emitToString().split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Int(Double(line.dropFirst(sample.count + 1)) ?? 0)
        }
        return 0
    }
}
