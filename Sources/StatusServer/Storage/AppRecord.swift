import StatusCore

/// An app as stored: its config, the digest of its API key and the secret its user tokens are signed with.
struct AppRecord: Sendable {
    let appId: String
    var config: AppConfig
    /// The config JSON as stored, for compare-and-set updates.
    var rawConfig: String
    let apiKeyDigest: String
    let tokenSecret: String
    /// The app's creation time (epoch ms, as stored): it tells apart two apps created under the same appId, so that
    /// events queued for one never reach the other. Empty for a record without it.
    var generation = ""
    /// Whether a node holds, or lately held, an `all`/`roles:` session of the app, so that setSelfStatus must log its
    /// changes for their resume (``RecentChanges``). As fresh as the record's cache (500 ms).
    var logsRecentChanges = false
}
