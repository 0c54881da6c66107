import Foundation
import StatusdClient

/// What the set-up phase created: the app, its API key and one device token per user.
struct ProvisionedApp: Sendable {
    let appId: String
    let apiKey: String
    let tokens: [String]
}

/// Creates the loader's app (premium, statusQuery on, a generous rate limit), or takes an existing one by its API key,
/// then its users and their tokens, the subscriptions (batches of at most 100 ids) and friendships of the
/// ``SocialGraph``, with bounded concurrency. A process running a slice of the devices provisions only their users.
struct AppProvisioner: Sendable {
    let client: SetupClient
    let graph: SocialGraph
    let concurrency: Int

    static func userId(_ index: Int) -> String { "u\(index)" }

    /// The app config the loader creates its app with. The connect limit (per user, SPEC §10.6) is lifted only when
    /// devices reconnect (`reconnects`, churn): a run that connects each device once stays far below it, and leaving
    /// the field out lets the loader drive nodes that predate it (`scripts/bench` compares builds side by side).
    static func config(
        subscriptionsPerUser: Int,
        friendNotify: Bool,
        multiDeviceSync: Bool,
        offlineGraceSeconds: Int = 0,
        reconnects: Bool = true
    ) -> AppConfigPatch {
        AppConfigPatch(
            plan: .premium,
            statusQuery: true,
            friendStatusNotify: friendNotify,
            multiDeviceSync: multiDeviceSync,
            subscriptionLimit: max(200, subscriptionsPerUser),
            rateLimit: .init(calls: 100_000_000, windowSeconds: 1),
            heartbeatTimeoutSeconds: 3600,
            connectRateLimit: reconnects ? .init(calls: 100_000_000, windowSeconds: 1) : nil,
            // Named only when asked for, so that the loader also drives nodes that predate the flag.
            offlineGraceSeconds: offlineGraceSeconds > 0 ? offlineGraceSeconds : nil
        )
    }

    func provision(appId: String, config: AppConfigPatch, existingAPIKey: String?, users: [Int]) async throws -> ProvisionedApp {
        let started = Date()
        let apiKey: String
        if let existingAPIKey {
            apiKey = existingAPIKey
        } else {
            apiKey = try await client.createApp(appId, config: config)
        }
        let client = client
        let app = client.app(appId, apiKey: apiKey)
        let graph = graph
        let tokens = TokenTable(count: graph.userCount)
        try await forEachConcurrently(users.count, limit: concurrency) { index in
            let user = users[index]
            let id = Self.userId(user)
            try await client.retrying { try await app.putUser(id) }
            tokens.set(user, try await client.retrying { try await app.mintToken(for: id).token })
        }
        Console.line(String(format: "setup: app %@, %d users with tokens (%.1f s)", appId, users.count, Date().timeIntervalSince(started)))
        let subscriptionCount = users.reduce(0) { $0 + graph.subscriptions[$1].count }
        if subscriptionCount > 0 {
            let phase = Date()
            try await forEachConcurrently(users.count, limit: concurrency) { index in
                let user = users[index]
                let targets = graph.subscriptions[user].map { Self.userId(Int($0)) }
                var start = 0
                while start < targets.count {
                    let batch = Array(targets[start..<min(start + 100, targets.count)])
                    try await client.retrying { try await app.subscribeUserStatus(batch, for: Self.userId(user)) }
                    start += 100
                }
            }
            Console.line(String(format: "setup: %d subscriptions (%.1f s)", subscriptionCount, Date().timeIntervalSince(phase)))
        }
        let friendCount = users.reduce(0) { $0 + graph.friendsAdded[$1].count }
        if friendCount > 0 {
            let phase = Date()
            try await forEachConcurrently(users.count, limit: concurrency) { index in
                let user = users[index]
                let friends = graph.friendsAdded[user].map { Self.userId(Int($0)) }
                guard !friends.isEmpty else { return }
                try await client.retrying { try await app.addFriends(Self.userId(user), friends) }
            }
            Console.line(String(format: "setup: %d friendships (%.1f s)", friendCount, Date().timeIntervalSince(phase)))
        }
        return ProvisionedApp(appId: appId, apiKey: apiKey, tokens: tokens.all())
    }
}
