import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import RedisClient
import StatusCore
import Synchronization
import Testing

@testable import StatusServer

/// SPEC §8 end to end: statusd nodes on the test Redis POST to a real HTTP receiver on 127.0.0.1. Serialized, because
/// timings are asserted and one test takes events over from a node that died.
@Suite(.redis, .serialized) struct WebhookTests {
    static let secret = "whsec-test"

    static func webhookConfig(_ url: String) -> JSONValue {
        ["webhook": ["url": .string(url), "secret": .string(secret)]]
    }

    @Test func loginLogoutAndKickArePostedSigned() async throws {
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            try await withStatusd { api in
                let app = try await api.createApp(config: Self.webhookConfig(url))
                try await app.createUsers(["alice"])

                try await Self.login(app, "alice", "d1", platform: "web")
                let login = try await receiver.event { $0["action"] == "login" && $0["deviceId"] == "d1" }
                #expect(login["event"] == "stateChange")
                #expect(login["appId"].string == app.appId)
                #expect(login["userId"] == "alice")
                #expect(login["platform"] == "web")
                #expect(login["reason"] == "register")
                #expect(login["statusType"] == "online")
                let eventTime = try #require(login["eventTime"].int)
                #expect(abs(eventTime - Int64(Date().timeIntervalSince1970 * 1000)) < 10_000)

                let request = try #require(receiver.requests.first)
                #expect(request.contentType == "application/json")
                let signature = try #require(request.signature)
                let (timestamp, mac) = try #require(Self.parse(signature: signature))
                #expect(abs(timestamp - Int64(Date().timeIntervalSince1970)) <= 5)
                #expect(mac == Self.hmac(secret: Self.secret, message: "\(timestamp).\(request.body)"))
                #expect(mac != Self.hmac(secret: "another secret", message: "\(timestamp).\(request.body)"))

                Self.succeed(try await app.call(.post, "/users/alice/devices/d1/logout"))
                let logout = try await receiver.event { $0["action"] == "logout" && $0["deviceId"] == "d1" }
                #expect(logout["reason"] == "unregister")
                #expect(logout["statusType"] == "unlogined")
                #expect(logout["platform"] == "web")

                try await Self.login(app, "alice", "d2", platform: "android")
                _ = try await receiver.event { $0["action"] == "login" && $0["deviceId"] == "d2" }
                Self.succeed(try await app.call(.post, "/users/alice/kick"))
                let kick = try await receiver.event { $0["action"] == "logout" && $0["deviceId"] == "d2" }
                #expect(kick["reason"] == "kicked")
                #expect(kick["statusType"] == "unlogined")
                #expect(kick["platform"] == "android")
                #expect(receiver.requests.allSatisfy { $0.answered == 200 })
            }
        }
    }

    @Test func failingReceiverGetsTheEventOnceItRecovers() async throws {
        let receiver = WebhookReceiver(planned: [.init(status: .internalServerError), .init(status: .internalServerError)])
        try await receiver.run { url in
            try await withStatusd { api in
                let app = try await api.createApp(config: Self.webhookConfig(url))
                try await app.createUsers(["bob"])
                let started = ContinuousClock.now
                try await Self.login(app, "bob", "phone")
                let requests = try await receiver.waitUntil { $0.contains { $0.answered == 200 } }
                #expect(ContinuousClock.now - started < .seconds(5))
                #expect(requests.count >= 3)
                #expect(requests.prefix(2).allSatisfy { $0.answered == 500 })
                #expect(Set(requests.map(\.body)).count == 1, "every attempt POSTs the same event")
                #expect(requests.last?.json["action"] == "login")
                for request in requests {
                    let (timestamp, mac) = try #require(Self.parse(signature: request.signature ?? ""))
                    #expect(mac == Self.hmac(secret: Self.secret, message: "\(timestamp).\(request.body)"))
                }
            }
        }
    }

    @Test func receiverSlowerThanTwoSecondsIsRetried() async throws {
        let receiver = WebhookReceiver(planned: [.init(status: .ok, delay: .seconds(3))])
        try await receiver.run { url in
            try await withStatusd { api in
                let app = try await api.createApp(config: Self.webhookConfig(url))
                try await app.createUsers(["carol"])
                try await Self.login(app, "carol", "laptop")
                let requests = try await receiver.waitUntil(timeout: .seconds(10)) { $0.count >= 2 }
                #expect(requests[0].body == requests[1].body)
                let gap = requests[1].at - requests[0].at
                // The timeout runs from the first attempt's sending; its arrival here can be late on a busy machine (its
                // connection is the first one), which shortens the gap seen here by as much. A retry that did not wait
                // for the timeout would come within the backoff, well under a second.
                #expect(gap >= .milliseconds(1200), "retried only after the 2 s timeout, got \(gap)")
                #expect(gap < .seconds(5))
            }
        }
    }

    @Test func noWebhookQueuesNothing() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "webhook-test"))
        let receiver = WebhookReceiver()
        let clock = ManualNodeClock()
        try await receiver.run { url in
            try await withStatusd(configure: clock.install) { api in
                let app = try await api.createApp()
                try await app.createUsers(["dave"])
                let before = try await Self.entriesAdded(redis, appId: app.appId)
                try await Self.login(app, "dave", "d1")
                Self.succeed(try await app.call(.post, "/users/dave/devices/d1/logout"))
                try await Self.login(app, "dave", "d2")
                Self.succeed(try await app.call(.post, "/users/dave/kick"))
                #expect(try await Self.entriesAdded(redis, appId: app.appId) == before)

                // The same steps with a webhook set do queue, so the count above would have seen them.
                Self.succeed(try await app.admin(.patch, "/v1/apps/\(app.appId)/config", Self.webhookConfig(url)))
                clock.advance(by: AppRegistry.cacheTTL + .milliseconds(100))
                try await Self.login(app, "dave", "d3")
                #expect(try await Self.entriesAdded(redis, appId: app.appId) == before + 1)
                _ = try await receiver.event { $0["deviceId"] == "d3" }
            }
        }
        await redis.close()
    }

    @Test func eventOfAnAppWithoutWebhookAnyMoreIsSkippedAndRemoved() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "webhook-test"))
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            try await withStatusd { api in
                let app = try await api.createApp(config: Self.webhookConfig(url))
                Self.succeed(try await app.admin(.patch, "/v1/apps/\(app.appId)/config", ["webhook": nil]))
                try await Self.enqueue(redis, appId: app.appId, body: Self.eventBody(appId: app.appId, deviceId: "stale"))
                let queue = WebhookAppQueue(redis: redis, scripts: try ScriptLibrary.load())
                let deadline = ContinuousClock.now + .seconds(5)
                while try await queue.count(app.appId) > 0, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(try await queue.count(app.appId) == 0, "the event is removed")
                #expect(try await redis.send("XLEN", RedisKeys(appId: app.appId).webhookStream).int == 0)
                #expect(receiver.requests.isEmpty)
            }
        }
        await redis.close()
    }

    @Test func eventQueuedWhileNoNodeRunsIsDeliveredWhenOneStarts() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "webhook-test"))
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            let appId = try await withStatusd { api in try await api.createApp(config: Self.webhookConfig(url)).appId }
            // No node runs now: queue an event the way WebhookQueue does.
            let body = Self.eventBody(appId: appId, deviceId: "queued-offline")
            try await Self.enqueue(redis, appId: appId, body: body)
            try await withStatusd { _ in
                let event = try await receiver.event { $0["deviceId"] == "queued-offline" }
                #expect(event["appId"].string == appId)
                let request = try #require(receiver.requests.first { $0.body == body })
                let (timestamp, mac) = try #require(Self.parse(signature: request.signature ?? ""))
                #expect(mac == Self.hmac(secret: Self.secret, message: "\(timestamp).\(body)"))
            }
        }
        await redis.close()
    }

    @Test func eventsLeftInTheSharedQueueOfAnEarlierVersionAreDelivered() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "webhook-test"))
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            let appId = try await withStatusd { api in try await api.createApp(config: Self.webhookConfig(url)).appId }
            // What an earlier version left behind: a stream entry and a scheduled retry.
            let fresh = Self.eventBody(appId: appId, deviceId: "legacy-stream")
            _ = try await redis.send("XADD", LegacyWebhookStore.stream, "*", "app", appId, "body", fresh, "attempt", "0")
            let retried = Self.eventBody(appId: appId, deviceId: "legacy-retry")
            let member = try JSONCoding.string(["id": "1-0", "app": appId, "body": retried])
            _ = try await redis.send("ZADD", LegacyWebhookStore.retries, "0", member)
            try await withStatusd { _ in
                _ = try await receiver.event { $0["deviceId"] == "legacy-stream" }
                _ = try await receiver.event { $0["deviceId"] == "legacy-retry" }
            }
            #expect(try await redis.send("EXISTS", LegacyWebhookStore.stream).int == 0)
            #expect(try await redis.send("EXISTS", LegacyWebhookStore.retries).int == 0)
        }
        await redis.close()
    }

    @Test func retryPendingWhenANodeStopsIsDeliveredByTheNextNode() async throws {
        let receiver = WebhookReceiver(fallback: .init(status: .serviceUnavailable))
        try await receiver.run { url in
            let appId = try await withStatusd { api in
                let app = try await api.createApp(config: Self.webhookConfig(url))
                try await app.createUsers(["erin"])
                try await Self.login(app, "erin", "tablet")
                _ = try await receiver.waitUntil { $0.count >= 2 }
                return app.appId
            }
            // The node is gone with the event still undelivered; the receiver recovers, a new node starts.
            #expect(receiver.requests.allSatisfy { $0.answered == 503 })
            receiver.setFallback(.init(status: .ok))
            try await withStatusd { _ in
                let event = try await receiver.event { $0["deviceId"] == "tablet" }
                #expect(event["appId"].string == appId)
            }
        }
    }

    @Test func eventsLeasedByANodeThatDiedAreTakenOver() async throws {
        let redis = RedisClient(configuration: try TestRedis.configuration, logger: Logger(label: "webhook-test"))
        let receiver = WebhookReceiver()
        try await receiver.run { url in
            let appId = try await withStatusd { api in try await api.createApp(config: Self.webhookConfig(url)).appId }
            // A node that leased the event and died before delivering it.
            let body = Self.eventBody(appId: appId, deviceId: "orphan")
            try await Self.enqueue(redis, appId: appId, body: body)
            let queue = WebhookAppQueue(redis: redis, scripts: try ScriptLibrary.load())
            let leased = try await queue.take(appId, limit: 10, lease: .milliseconds(700))
            #expect(leased.jobs.map(\.body) == [body])
            #expect(try await queue.take(appId, limit: 10, lease: .seconds(1)).jobs.isEmpty, "hidden while leased")

            var logger = Logger(label: "webhook-test")
            logger.logLevel = .warning
            let configuration = ServerConfiguration(redis: try TestRedis.configuration, adminKey: "unused", nodeId: "claimer-" + UUID().uuidString)
            let wiring = try NodeWiring(configuration: configuration, redis: redis, logger: logger)
            let dispatcher = wiring.webhookDispatcher()
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await dispatcher.run() }
                _ = try await receiver.event { $0["deviceId"] == "orphan" }
                group.cancelAll()
            }
            #expect(ContinuousClock.now - started >= .milliseconds(500), "taken again only once the lease ended")
            #expect(try await queue.count(appId) == 0)
        }
        await redis.close()
    }

    @Test func backoffDoublesUpToTheCap() {
        let settings = WebhookDispatchSettings()
        let delays = (0..<12).map { settings.backoff(afterAttempt: $0).inMilliseconds }
        #expect(delays == [200, 400, 800, 1600, 3200, 6400, 12_800, 25_600, 51_200, 60_000, 60_000, 60_000])
        #expect(settings.backoff(afterAttempt: 200).inMilliseconds == 60_000)
        #expect(settings.maxInFlight == 64)
        #expect(settings.maxInFlightPerApp == 4)
        #expect(settings.maxPendingPerApp == 100_000)
        #expect(settings.timeout == .seconds(2))
    }

    @Test func signatureMatchesAnIndependentHMAC() {
        let body = #"{"event":"stateChange"}"#
        let header = WebhookSigner.signature(body: body, secret: "k", timestamp: 1_700_000_000)
        #expect(header == "t=1700000000,v1=" + Self.hmac(secret: "k", message: "1700000000." + body))
    }

    // MARK: Helpers

    /// Logs a backend-driven device in; fails the test unless it is accepted.
    static func login(_ app: APIClient, _ userId: String, _ deviceId: String, platform: String = "web") async throws {
        succeed(try await app.call(.post, "/users/\(userId)/devices/\(deviceId)/login", ["platform": .string(platform)]))
    }

    /// Fails the test unless the response is a 200.
    static func succeed(_ response: APIResponse, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == 200, "\(response.body)", sourceLocation: sourceLocation)
    }

    /// `t` and `v1` of an `X-Statusd-Signature` header.
    static func parse(signature: String) -> (Int64, String)? {
        var fields: [String: String] = [:]
        for part in signature.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { fields[pair[0]] = pair[1] }
        }
        guard let timestamp = fields["t"].flatMap({ Int64($0) }), let mac = fields["v1"] else { return nil }
        return (timestamp, mac)
    }

    /// Hex HMAC-SHA256, computed here rather than through statusd's signer.
    static func hmac(secret: String, message: String) -> String {
        HMAC<SHA256>.authenticationCode(for: Data(message.utf8), using: SymmetricKey(data: Data(secret.utf8)))
            .map { String(format: "%02x", $0) }.joined()
    }

    /// `entries-added` of the app's webhook stream (0 while it does not exist).
    static func entriesAdded(_ redis: RedisClient, appId: String) async throws -> Int64 {
        let stream = RedisKeys(appId: appId).webhookStream
        guard try await redis.send("EXISTS", stream).int == 1 else { return 0 }
        let info = try await redis.send("XINFO", "STREAM", stream).array ?? []
        var index = 0
        while index + 1 < info.count {
            if info[index].string == "entries-added" { return info[index + 1].int ?? 0 }
            index += 2
        }
        throw TestAppError(message: "XINFO STREAM without entries-added: \(info)")
    }

    /// Queues an event for `appId` the way ``WebhookQueue`` does (its queue, then the index).
    static func enqueue(_ redis: RedisClient, appId: String, body: String, generation: String = "") async throws {
        let scripts = try ScriptLibrary.load()
        let enqueued = try await WebhookAppQueue(redis: redis, scripts: scripts)
            .enqueue(appId: appId, body: body, generation: generation, bound: 100_000)
        if enqueued.first { try await WebhookAppIndex(redis: redis, scripts: scripts).add(appId) }
    }

    /// A SPEC §8 body for a device of `appId`.
    static func eventBody(appId: String, deviceId: String) -> String {
        let time = Int64(Date().timeIntervalSince1970 * 1000)
        return #"{"action":"login","appId":"\#(appId)","deviceId":"\#(deviceId)","event":"stateChange","eventTime":\#(time),"#
            + #""platform":"web","reason":"register","statusType":"online","userId":"zed"}"#
    }
}

/// A webhook receiver for the tests: a Hummingbird app on 127.0.0.1 (free port) recording every POST to `/hook`, and
/// answering with the planned answers in order, then with the fallback.
final class WebhookReceiver: Sendable {
    /// How to answer one request.
    struct Answer: Sendable {
        var status: HTTPResponse.Status = .ok
        var delay: Duration = .zero
    }

    /// One request as received.
    struct Received: Sendable {
        var body: String
        var signature: String?
        var contentType: String?
        var answered: Int
        var at: ContinuousClock.Instant

        var json: JSONValue { (try? JSONDecoder().decode(JSONValue.self, from: Data(body.utf8))) ?? .null }
    }

    private struct State {
        var received: [Received] = []
        var planned: [Answer]
        var fallback: Answer
    }

    private let state: Mutex<State>

    init(planned: [Answer] = [], fallback: Answer = Answer()) {
        state = Mutex(State(planned: planned, fallback: fallback))
    }

    /// Every request so far, in arrival order.
    var requests: [Received] { state.withLock { $0.received } }

    /// Changes the answer given once the planned ones are used up.
    func setFallback(_ answer: Answer) {
        state.withLock { $0.fallback = answer }
    }

    /// Runs the receiver while `body` runs; `body` gets the URL to configure.
    func run<Value: Sendable>(_ body: @escaping @Sendable (String) async throws -> Value) async throws -> Value {
        let router = Router()
        router.post("hook") { request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 1 << 20)
            let signature = request.headers[HTTPField.Name("X-Statusd-Signature")!]
            let answer = self.state.withLock { state in
                let answer = state.planned.isEmpty ? state.fallback : state.planned.removeFirst()
                state.received.append(
                    Received(
                        body: String(buffer: bytes),
                        signature: signature,
                        contentType: request.headers[.contentType],
                        answered: Int(answer.status.code),
                        at: .now
                    )
                )
                return answer
            }
            if answer.delay > .zero { try? await Task.sleep(for: answer.delay) }
            return Response(status: answer.status)
        }
        var logger = Logger(label: "webhook-receiver")
        logger.logLevel = .warning
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: logger)
        return try await app.test(.live) { client in
            let port = try #require(client.port)
            return try await body("http://127.0.0.1:\(port)/hook")
        }
    }

    /// Waits until the requests satisfy `condition`; throws past `timeout`.
    @discardableResult
    func waitUntil(timeout: Duration = .seconds(8), _ condition: ([Received]) -> Bool) async throws -> [Received] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let received = requests
            if condition(received) { return received }
            guard ContinuousClock.now < deadline else {
                throw TestAppError(message: "webhook receiver: condition not met in \(timeout); got \(received.map(\.body))")
            }
            try await Task.sleep(for: .milliseconds(25))
        }
    }

    /// Waits for a request answered 2xx whose event matches `predicate`, and returns that event.
    func event(timeout: Duration = .seconds(8), _ predicate: @escaping (JSONValue) -> Bool) async throws -> JSONValue {
        let received = try await waitUntil(timeout: timeout) { $0.contains { $0.answered / 100 == 2 && predicate($0.json) } }
        return received.first { $0.answered / 100 == 2 && predicate($0.json) }!.json
    }
}
