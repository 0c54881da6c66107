import StatusCore

/// An app as stored: its config, the digest of its API key and the secret its user tokens are signed with.
struct AppRecord: Sendable {
    let appId: String
    var config: AppConfig
    /// The config JSON as stored, for compare-and-set updates.
    var rawConfig: String
    let apiKeyDigest: String
    let tokenSecret: String
}
