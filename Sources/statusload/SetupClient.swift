import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP calls of the set-up phase (and of `--via http` changes), through URLSession: admin API with the admin key,
/// server API with the app's API key. Answers are decoded with JSONSerialization; 429 and 503 are retried.
struct SetupClient: Sendable {
    let baseURL: String
    let adminKey: String
    let session: URLSession

    init(baseURL: String, adminKey: String, maxConnections: Int) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.adminKey = adminKey
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = maxConnections
        configuration.timeoutIntervalForRequest = 30
        self.session = URLSession(configuration: configuration)
    }

    /// `POST /v1/apps`: creates the app and returns its API key.
    func createApp(_ appId: String, config: [String: Any]) async throws -> String {
        let answer = try await call("POST", "/v1/apps", key: adminKey, body: ["appId": appId, "config": config])
        guard let key = answer["apiKey"] as? String else { throw SetupError("no apiKey in the app creation answer") }
        return key
    }

    /// `DELETE /v1/apps/{app}`.
    func deleteApp(_ appId: String) async throws {
        _ = try await call("DELETE", "/v1/apps/\(appId)", key: adminKey, body: nil)
    }

    /// `PUT /v1/apps/{app}/users/{user}` with an empty profile.
    func putUser(app: String, apiKey: String, user: String) async throws {
        _ = try await call("PUT", "/v1/apps/\(app)/users/\(user)", key: apiKey, body: [String: Any]())
    }

    /// `POST /v1/apps/{app}/users/{user}/tokens`: a device token for the user.
    func token(app: String, apiKey: String, user: String) async throws -> String {
        let answer = try await call("POST", "/v1/apps/\(app)/users/\(user)/tokens", key: apiKey, body: [String: Any]())
        guard let token = answer["token"] as? String else { throw SetupError("no token in the answer") }
        return token
    }

    /// `POST /v1/apps/{app}/users/{user}/subscriptions` with at most `subscribeBatchLimit` ids.
    func subscribe(app: String, apiKey: String, user: String, to targets: [String]) async throws {
        _ = try await call("POST", "/v1/apps/\(app)/users/\(user)/subscriptions", key: apiKey, body: ["userIds": targets])
    }

    /// `PUT /v1/apps/{app}/users/{user}/friends`: mutual friendships.
    func addFriends(app: String, apiKey: String, user: String, friends: [String]) async throws {
        _ = try await call("PUT", "/v1/apps/\(app)/users/\(user)/friends", key: apiKey, body: ["userIds": friends])
    }

    /// `PUT /v1/apps/{app}/users/{user}/status`: setSelfStatus through the server API.
    func setStatus(app: String, apiKey: String, user: String, customStatus: String) async throws {
        _ = try await call("PUT", "/v1/apps/\(app)/users/\(user)/status", key: apiKey, body: ["customStatus": customStatus], attempts: 1)
    }

    /// `GET /v1/apps/{app}/users?status=online`, every page: how many users the server lists as online.
    func countOnlineUsers(app: String, apiKey: String) async throws -> Int {
        var count = 0
        var cursor: String?
        for _ in 0..<10_000 {
            var path = "/v1/apps/\(app)/users?status=online&limit=100"
            if let cursor { path += "&cursor=" + (cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cursor) }
            let answer = try await call("GET", path, key: apiKey, body: nil)
            count += (answer["users"] as? [Any])?.count ?? 0
            guard let next = answer["cursor"] as? String, !next.isEmpty else { break }
            cursor = next
        }
        return count
    }

    /// One JSON call; retries 429/503 and transport errors up to `attempts` times with a short backoff.
    func call(_ method: String, _ path: String, key: String, body: Any?, attempts: Int = 5) async throws -> [String: Any] {
        guard let url = URL(string: baseURL + path) else { throw SetupError("bad URL \(baseURL + path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
        }
        var lastError: any Error = SetupError("\(method) \(path): no attempt")
        for attempt in 0..<max(attempts, 1) {
            if attempt > 0 { try await Task.sleep(for: .milliseconds(100 * attempt)) }
            do {
                let (data, response) = try await session.data(for: request)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                if status == 429 || status == 503 {
                    lastError = SetupError("\(method) \(path): HTTP \(status)")
                    continue
                }
                guard (200..<300).contains(status) else {
                    throw SetupError("\(method) \(path): HTTP \(status) \(String(decoding: data, as: UTF8.self))", retryable: false)
                }
                if data.isEmpty { return [:] }
                return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
            } catch let error as SetupError where !error.retryable {
                throw error
            } catch {
                lastError = error
            }
        }
        throw lastError
    }
}

/// A set-up call that failed.
struct SetupError: Error, CustomStringConvertible {
    let description: String
    var retryable = true

    init(_ description: String, retryable: Bool = true) {
        self.description = description
        self.retryable = retryable
    }
}
