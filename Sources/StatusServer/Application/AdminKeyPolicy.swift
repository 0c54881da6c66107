import Foundation

/// What an operator-supplied admin key must be, checked before the node starts: a short key, an empty one (an unset
/// variable in a unit file or compose file), or a placeholder shipped in `deploy/` would otherwise open the admin API to
/// anyone who guesses or reads it.
public enum AdminKeyPolicy {
    /// The shortest admin key accepted, in bytes.
    public static let minimumBytes = 16

    /// The placeholder values shipped in `deploy/` (compose default, Kubernetes secret, systemd env example).
    public static let placeholders: Set<String> = ["REPLACE-ME", "REPLACE-ME-with-a-long-random-admin-key", "dev-admin-key-change-me"]

    /// Why `key` is refused, or nil when it is acceptable.
    public static func problem(with key: String) -> String? {
        if key.trimmingCharacters(in: .whitespaces).isEmpty {
            return "the admin key is empty: set STATUSD_ADMIN_KEY (or --admin-key) to a random secret, or unset it to have one generated"
        }
        if placeholders.contains(key) {
            return "the admin key is the placeholder \"\(key)\" shipped in deploy/: replace it with a random secret (openssl rand -hex 24)"
        }
        if key.utf8.count < minimumBytes {
            return "the admin key is shorter than \(minimumBytes) bytes: use a random secret (openssl rand -hex 24)"
        }
        return nil
    }
}
