import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import RedisClient
import StatusCore
import Testing

@testable import StatusServer

/// setSelfStatus and getUserStatus answered before the router (``HotRoute``, ``HotRoutes``): the paths recognised are
/// exactly the router's routes, and every answer is the router's own answer.
@Suite struct HotRouteTests {
    @Test func recognisesTheTwoRoutesWithTheirSegmentsAsSent() {
        #expect(
            HotRoute.match(method: .put, path: "/v1/apps/app1/users/alice/status")
                == HotRoute(operation: .setSelfStatus, appIdSegment: "app1", userIdSegment: "alice")
        )
        #expect(
            HotRoute.match(method: .post, path: "/v1/apps/app1/users/alice/status/query")
                == HotRoute(operation: .getUserStatus, appIdSegment: "app1", userIdSegment: "alice")
        )
        // Percent-decoding and validation are the handler's, as for the router's parameters.
        #expect(
            HotRoute.match(method: .put, path: "/v1/apps/a%20b/users/u%2Fv/status")
                == HotRoute(operation: .setSelfStatus, appIdSegment: "a%20b", userIdSegment: "u%2Fv")
        )
        #expect(HotRoute.match(method: .put, path: "/v1/apps/a/users/u/status")?.routePath == "/v1/apps/{appId}/users/{userId}/status")
        #expect(
            HotRoute.match(method: .post, path: "/v1/apps/a/users/u/status/query")?.routePath
                == "/v1/apps/{appId}/users/{userId}/status/query"
        )
    }

    /// Everything else is the router's: other methods, empty segments (the router would skip them and resolve another
    /// route), trailing slashes, other spellings.
    @Test(arguments: [
        (HTTPRequest.Method.get, "/v1/apps/a/users/u/status"),
        (.post, "/v1/apps/a/users/u/status"),
        (.put, "/v1/apps/a/users/u/status/query"),
        (.delete, "/v1/apps/a/users/u/status"),
        (.put, "/v1/apps//users/u/status"),
        (.put, "/v1/apps/a/users//status"),
        (.put, "/v1/apps/a/users/u/status/"),
        (.post, "/v1/apps/a/users/u/status/query/"),
        (.put, "/v1/apps/a/users/u//status"),
        (.put, "//v1/apps/a/users/u/status"),
        (.put, "/v1/apps/a/users/u/statusx"),
        (.put, "/v1/apps/a/users/u/Status"),
        (.put, "/V1/apps/a/users/u/status"),
        (.put, "/v1/apps/a/user/u/status"),
        (.put, "/v1/apps/a/b/users/u/status"),
        (.put, "/v1/apps/a/users/u/v/status"),
        (.put, "/v1/apps/a/users/u"),
        (.put, "/v1/apps/a/users/u/%73tatus"),
        (.put, "/v1/apps/a/users/"),
        (.put, "/v1/apps/"),
        (.put, ""),
    ])
    func leavesEveryOtherPathToTheRouter(method: HTTPRequest.Method, path: String) {
        #expect(HotRoute.match(method: method, path: path) == nil)
    }

    @Test func theDateHeaderIsAnIMFFixdate() {
        #expect(HTTPDateHeader.format(epochSeconds: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDateHeader.format(epochSeconds: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDateHeader.format(epochSeconds: 1_956_528_000) == "Thu, 01 Jan 2032 00:00:00 GMT")
        let now = HTTPDateHeader().current
        let parser = DateFormatter()
        parser.locale = Locale(identifier: "en_US_POSIX")
        parser.timeZone = TimeZone(identifier: "GMT")
        parser.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let parsed = try? #require(parser.date(from: now))
        #expect(abs((parsed ?? .distantPast).timeIntervalSinceNow) < 5, "\(now)")
    }
}

/// The hot routes against the router, on a real Redis.
@Suite(.redis) struct HotRouteAnswerTests {
    /// The two hot routes are routes of the router, by the same paths (the metrics' `http.route` label).
    @Test func theHotRoutesAreRoutesOfTheRouter() throws {
        let routes = try OpenAPIDocumentTests.registeredRoutes()
        #expect(routes.contains("PUT " + HotRoute.setSelfStatusPath))
        #expect(routes.contains("POST " + HotRoute.getUserStatusPath))
    }

    /// A seeded run of requests on the hot paths (right and wrong keys, apps, users, bodies), each answered by the
    /// router alone and by the node's responder, which answers them before the router: the same status, body and
    /// `Retry-After`. Each request is sent to the router, then to the hot route, then to the router again, so that a
    /// request that changes something is compared in the state it left (a repeated setSelfStatus changes nothing more).
    @Test func everyAnswerIsTheRoutersAnswer() async throws {
        let seed = ProcessInfo.processInfo.environment["STATUSD_HOT_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
        let adminKey = "admin-" + UUID().uuidString
        var logger = Logger(label: "hot-test")
        logger.logLevel = .warning
        let configuration = ServerConfiguration(host: "127.0.0.1", port: 0, redis: try TestRedis.configuration, adminKey: adminKey)
        let redis = RedisClient(configuration: configuration.nodeRedis, logger: logger)
        let wiring = try NodeWiring(configuration: configuration, redis: redis, logger: logger)
        let responder = try buildResponder(
            wiring: wiring,
            index: FanoutIndex(),
            activity: AppActivity(metrics: wiring.metrics),
            logger: logger
        )
        let node = Application(responder: responder, services: [redis], logger: logger)
        let routerAlone = Application(responder: responder.router, logger: logger)
        try await node.test(.router) { nodeClient in
            try await routerAlone.test(.router) { routerClient in
                var rng = SplitMix(seed: seed)
                let admin = APIClient(client: RouterTestClient(client: nodeClient), adminKey: adminKey)
                let config: JSONValue = ["plan": "premium", "statusQuery": true, "rateLimit": ["calls": 100_000, "windowSeconds": 60]]
                let app = try await admin.createApp(config: config)
                let other = try await admin.createApp(config: config)
                try await app.createUsers(["alice", "bob", "carol"])
                let apps = [app.appId, app.appId, app.appId, other.appId, "no-such-app", "a%ZZ", ""]
                let users = ["alice", "alice", "bob", "ghost", "a%2Fb", "%00", String(repeating: "u", count: 200)]
                let keys: [String?] = [app.apiKey, app.apiKey, app.apiKey, other.apiKey, "wrong", nil, adminKey]
                let statusBodies = [
                    #"{"customStatus":"in a meeting"}"#, #"{"customStatus":"lunch","clearAfterSeconds":60}"#,
                    #"{"customStatus":null}"#, #"{"availability":"busy"}"#, #"{"availability":"gone"}"#,
                    #"{"clearAfterSeconds":60}"#, #"{"customStatus":"x","extra":1}"#, #"{"customStatus":"#,
                    "", "[]", #"{"customStatus":"\#(String(repeating: "é", count: 51))"}"#, #"{"customStatus":5}"#,
                ]
                let queryBodies = [
                    #"{"userIds":["bob"]}"#, #"{"userIds":["alice","bob","carol","ghost"]}"#, #"{"userIds":[]}"#,
                    #"{"userIds":"bob"}"#, #"{"userIds":["bob"],"detail":true}"#, "", "{",
                ]
                // First one request of each kind of answer (200, 404 for an unknown user, 403, 401, 400), then the
                // seeded ones: (query, app, user, body, key) as indexes into the lists above.
                let kinds = [(0, 0, 0, 0, 0), (0, 0, 3, 0, 0), (0, 0, 0, 0, 3), (0, 0, 0, 0, 4), (0, 0, 0, 7, 0)]
                var seen = Set<Int>()
                for step in 0..<(kinds.count + 160) {
                    let draw =
                        step < kinds.count
                        ? kinds[step]
                        : (
                            rng.below(2), rng.below(apps.count), rng.below(users.count),
                            rng.below(max(statusBodies.count, queryBodies.count)), rng.below(keys.count)
                        )
                    let query = draw.0 == 1
                    let appId = apps[draw.1]
                    let userId = users[draw.2]
                    let path = "/v1/apps/\(appId)/users/\(userId)/status" + (query ? "/query" : "")
                    let method: HTTPRequest.Method = query ? .post : .put
                    let body = query ? queryBodies[draw.3 % queryBodies.count] : statusBodies[draw.3 % statusBodies.count]
                    let key = keys[draw.4]
                    let routerClient = APIClient(client: RouterTestClient(client: routerClient), adminKey: adminKey)
                    let nodeClient = APIClient(client: RouterTestClient(client: nodeClient), adminKey: adminKey)
                    let first = try await routerClient.raw(method, path, key: key, body: body.isEmpty ? nil : body)
                    let hot = try await nodeClient.raw(method, path, key: key, body: body.isEmpty ? nil : body)
                    let again = try await routerClient.raw(method, path, key: key, body: body.isEmpty ? nil : body)
                    let what = "seed \(seed) step \(step): \(method) \(path) key \(key == nil ? "none" : "set") body \(body)"
                    seen.insert(hot.status)
                    #expect(hot.status == first.status, "\(what)")
                    #expect(hot.status == again.status, "\(what)")
                    #expect(Self.comparable(hot.body) == Self.comparable(again.body), "\(what)")
                    #expect(hot.headers[.contentType] == again.headers[.contentType], "\(what)")
                    #expect(hot.headers[.retryAfter] == again.headers[.retryAfter], "\(what)")
                }
                // The run met the answers it is there to compare, not only one kind.
                #expect(seen.isSuperset(of: [200, 400, 401, 403, 404]), "seed \(seed): answers \(seen.sorted())")
                // The hot answers count in the router's series (one set of metrics for the node).
                let metrics = try await admin.metricsText()
                #expect(metrics.contains(#"hb_requests{http_route="/v1/apps/{appId}/users/{userId}/status""#))
            }
        }
    }

    /// A body as compared: a custom status with an expiry is set anew by each call (a new version, an expiry counted
    /// from the call), so those two fields are left out of it.
    static func comparable(_ body: JSONValue) -> JSONValue {
        guard case .object(var fields) = body, fields["customStatusExpiresAt"] != nil else { return body }
        fields["customStatusExpiresAt"] = nil
        fields["version"] = nil
        return .object(fields)
    }

    /// On a live socket, a hot request refused while its body arrives (too large, malformed chunk) changes nothing,
    /// and a hot request pipelined with a routed one is answered first, in order.
    @Test func onALiveSocketARefusedBodyChangesNothingAndPipelinedAnswersKeepTheirOrder() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            _ = expectOK(try await retryingUnavailable { try await app.setStatus("alice", "before") })
            let port = try #require(api.client.port)
            let path = "/v1/apps/\(app.appId)/users/alice/status"
            let head = "PUT \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.apiKey)\r\nContent-Type: application/json\r\n"
            func customStatus() async throws -> JSONValue {
                try await retryingUnavailable { try await app.query("alice", ["alice"]) }.body["statuses"][0]["customStatus"]
            }
            // A chunked body past 1 MiB.
            let chunk = String(repeating: "x", count: 65_536)
            var large = head + "Transfer-Encoding: chunked\r\n\r\n11\r\n{\"customStatus\":\"\r\n"
            for _ in 0..<17 { large += "10000\r\n" + chunk + "\r\n" }
            large += "2\r\n\"}\r\n0\r\n\r\n"
            let tooLarge = try await RawHTTP.exchange(port: port, large)
            #expect(tooLarge.status == 413, "\(tooLarge.text.prefix(300))")
            #expect(tooLarge.body["error"]["code"] == "PAYLOAD_TOO_LARGE")
            #expect(try await customStatus() == "before")
            // A malformed chunk after a good start.
            let malformed = try await RawHTTP.exchange(port: port, head + "Transfer-Encoding: chunked\r\n\r\n11\r\n{\"customStatus\":\"\r\nZZ\r\n")
            #expect(malformed.status == 400, "\(malformed.text.prefix(300))")
            #expect(try await customStatus() == "before")
            // Pipelined: the hot PUT, then a routed GET; answered in that order.
            let body = #"{"customStatus":"after"}"#
            let pipelined = try await RawHTTP.exchange(
                port: port,
                head + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
                    + "GET /v1/apps/\(app.appId)/users/alice/subscriptions HTTP/1.1\r\nHost: x\r\n"
                    + "Authorization: Bearer \(app.apiKey)\r\nConnection: close\r\n\r\n"
            )
            #expect(pipelined.statuses == [200, 200], "\(pipelined.text)")
            let first = try #require(pipelined.text.range(of: #""customStatus":"after""#))
            let second = try #require(pipelined.text.range(of: #""userIds""#))
            #expect(first.lowerBound < second.lowerBound)
            #expect(try await customStatus() == "after")
        }
    }

    /// On a live socket the hot routes' responses carry what Hummingbird's application adds to every other response:
    /// `Date` and `Server`, with the same content type and length framing.
    @Test func liveAnswersCarryTheHeadersOfEveryOtherAnswer() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            let hot = try await app.call(.put, "/users/alice/status", ["customStatus": "here"])
            let routed = try await app.call(.get, "/users/alice/subscriptions")
            #expect(hot.status == 200)
            #expect(routed.status == 200)
            #expect(hot.headers[.server] == "statusd")
            #expect(hot.headers[.server] == routed.headers[.server])
            #expect(hot.headers[.date] != nil)
            #expect(hot.headers[.contentType] == routed.headers[.contentType])
            #expect(hot.headers[.contentLength] != nil)
            let refused = try await app.call(.put, "/users/alice/status", ["customStatus": "here"], key: "wrong")
            #expect(refused.status == 401)
            #expect(refused.body["error"]["code"].string == "UNAUTHORIZED")
            #expect(refused.headers[.date] != nil)
        }
    }
}
