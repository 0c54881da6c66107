/// An app's feature flags and limits (SPEC §3), with the SPEC's defaults.
public struct AppConfig: Sendable, Hashable, Codable {
    /// The app's plan.
    public enum Plan: String, Sendable, Hashable, Codable {
        case basic
        case premium
    }

    /// The per-user, per-operation sliding window of SPEC §5.
    public struct RateLimit: Sendable, Hashable, Codable {
        /// Accepted calls allowed in any window.
        public var calls: Int
        /// The window's length in seconds.
        public var windowSeconds: Int

        /// Creates a rate limit.
        public init(calls: Int, windowSeconds: Int) {
            self.calls = calls
            self.windowSeconds = windowSeconds
        }
    }

    /// Where state-change callbacks go (SPEC §8).
    public struct Webhook: Sendable, Hashable, Codable {
        /// The receiver's URL.
        public var url: String
        /// The HMAC-SHA256 signing secret.
        public var secret: String

        /// Creates a webhook target.
        public init(url: String, secret: String) {
            self.url = url
            self.secret = secret
        }
    }

    public var plan: Plan = .basic
    public var statusQuery = false
    public var friendStatusNotify = false
    public var multiDeviceSync = true
    public var customStatusMaxBytes = 100
    public var subscriptionLimit = 200
    public var subscribeBatchLimit = 100
    public var queryBatchLimit = 500
    public var rateLimit = RateLimit(calls: 20, windowSeconds: 5)
    public var heartbeatTimeoutSeconds = 400
    public var subscriptionRetentionSeconds = 86_400
    public var webhook: Webhook?
    /// SPEC §3: connected devices per user (1–100); a login past it kicks the user's earliest-connected device.
    public var maxDevicesPerUser = 10
    /// SPEC §3: which of a user's other devices a login kicks.
    public var loginPolicy = LoginPolicy.multi
    /// SPEC §2/§3: who may see `lastActiveAt` of users who set no `lastSeenPrivacy` of their own.
    public var lastSeenPrivacy = LastSeenPrivacy.everyone
    /// Browser origins allowed to open device WebSockets (``AllowedOrigins``), normalized; nil accepts any origin.
    public var allowedOrigins: [String]?
    /// SPEC §3/§10.6: device connects (WebSocket upgrades and backend logins together) per user, sliding window.
    public var connectRateLimit = RateLimit(calls: 30, windowSeconds: 60)
    /// SPEC §3/§10.3: how long (0–300 s) a user whose last device dropped (not logged out, not kicked) still counts as
    /// `online`, so that a reconnect within it shows others nothing.
    public var offlineGraceSeconds = 0

    /// The defaults of SPEC §3.
    public init() {}

    enum CodingKeys: String, CodingKey {
        case plan, statusQuery, friendStatusNotify, multiDeviceSync, customStatusMaxBytes, subscriptionLimit
        case subscribeBatchLimit, queryBatchLimit, rateLimit, heartbeatTimeoutSeconds, subscriptionRetentionSeconds
        case webhook, maxDevicesPerUser, loginPolicy, lastSeenPrivacy, allowedOrigins, connectRateLimit, offlineGraceSeconds
    }

    /// Decodes a stored config; a flag missing from it (stored before the flag existed) keeps its default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = AppConfig()
        plan = try container.decodeIfPresent(Plan.self, forKey: .plan) ?? defaults.plan
        statusQuery = try container.decodeIfPresent(Bool.self, forKey: .statusQuery) ?? defaults.statusQuery
        friendStatusNotify = try container.decodeIfPresent(Bool.self, forKey: .friendStatusNotify) ?? defaults.friendStatusNotify
        multiDeviceSync = try container.decodeIfPresent(Bool.self, forKey: .multiDeviceSync) ?? defaults.multiDeviceSync
        customStatusMaxBytes = try container.decodeIfPresent(Int.self, forKey: .customStatusMaxBytes) ?? defaults.customStatusMaxBytes
        subscriptionLimit = try container.decodeIfPresent(Int.self, forKey: .subscriptionLimit) ?? defaults.subscriptionLimit
        subscribeBatchLimit = try container.decodeIfPresent(Int.self, forKey: .subscribeBatchLimit) ?? defaults.subscribeBatchLimit
        queryBatchLimit = try container.decodeIfPresent(Int.self, forKey: .queryBatchLimit) ?? defaults.queryBatchLimit
        rateLimit = try container.decodeIfPresent(RateLimit.self, forKey: .rateLimit) ?? defaults.rateLimit
        heartbeatTimeoutSeconds = try container.decodeIfPresent(Int.self, forKey: .heartbeatTimeoutSeconds) ?? defaults.heartbeatTimeoutSeconds
        subscriptionRetentionSeconds =
            try container.decodeIfPresent(Int.self, forKey: .subscriptionRetentionSeconds) ?? defaults.subscriptionRetentionSeconds
        webhook = try container.decodeIfPresent(Webhook.self, forKey: .webhook)
        maxDevicesPerUser = try container.decodeIfPresent(Int.self, forKey: .maxDevicesPerUser) ?? defaults.maxDevicesPerUser
        loginPolicy = try container.decodeIfPresent(LoginPolicy.self, forKey: .loginPolicy) ?? defaults.loginPolicy
        lastSeenPrivacy = try container.decodeIfPresent(LastSeenPrivacy.self, forKey: .lastSeenPrivacy) ?? defaults.lastSeenPrivacy
        allowedOrigins = try container.decodeIfPresent([String].self, forKey: .allowedOrigins)
        connectRateLimit = try container.decodeIfPresent(RateLimit.self, forKey: .connectRateLimit) ?? defaults.connectRateLimit
        offlineGraceSeconds = try container.decodeIfPresent(Int.self, forKey: .offlineGraceSeconds) ?? defaults.offlineGraceSeconds
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(plan, forKey: .plan)
        try container.encode(statusQuery, forKey: .statusQuery)
        try container.encode(friendStatusNotify, forKey: .friendStatusNotify)
        try container.encode(multiDeviceSync, forKey: .multiDeviceSync)
        try container.encode(customStatusMaxBytes, forKey: .customStatusMaxBytes)
        try container.encode(subscriptionLimit, forKey: .subscriptionLimit)
        try container.encode(subscribeBatchLimit, forKey: .subscribeBatchLimit)
        try container.encode(queryBatchLimit, forKey: .queryBatchLimit)
        try container.encode(rateLimit, forKey: .rateLimit)
        try container.encode(heartbeatTimeoutSeconds, forKey: .heartbeatTimeoutSeconds)
        try container.encode(subscriptionRetentionSeconds, forKey: .subscriptionRetentionSeconds)
        // `webhook` is always present, `null` when unset.
        try container.encode(webhook, forKey: .webhook)
        try container.encode(maxDevicesPerUser, forKey: .maxDevicesPerUser)
        try container.encode(loginPolicy, forKey: .loginPolicy)
        try container.encode(lastSeenPrivacy, forKey: .lastSeenPrivacy)
        // Like `webhook`, always present: `null` means any origin.
        try container.encode(allowedOrigins, forKey: .allowedOrigins)
        try container.encode(connectRateLimit, forKey: .connectRateLimit)
        try container.encode(offlineGraceSeconds, forKey: .offlineGraceSeconds)
    }

    /// True when the premium plan and the `statusQuery` switch are both on.
    public var allowsStatusQuery: Bool { plan == .premium && statusQuery }

    /// Throws `PLAN_NOT_SUPPORTED`, then `FEATURE_DISABLED`, for the operations that need premium + statusQuery.
    public func requireStatusQuery() throws(StatusError) {
        guard plan == .premium else { throw StatusError(.planNotSupported, "this operation needs the premium plan") }
        guard statusQuery else { throw StatusError(.featureDisabled, "user status query is disabled for this app") }
    }

    /// The interval a device is told to heartbeat at: well below the timeout.
    public var heartbeatIntervalSeconds: Int { max(1, heartbeatTimeoutSeconds * 2 / 5) }
}
