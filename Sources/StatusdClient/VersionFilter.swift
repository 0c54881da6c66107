/// The latest `version` seen per user, so that a status older than one already delivered is dropped (SPEC §2: events
/// carry the version "so a client can drop stale or duplicate ones"). Kept across reconnects, as the resume and
/// snapshot frames may repeat what arrived live.
struct VersionFilter: Sendable {
    private var latest: [String: Int64] = [:]

    /// Records `status` and tells whether it is as new as anything seen for its user.
    mutating func admit(_ status: UserStatus) -> Bool {
        let version = Int64(status.version)
        if let known = latest[status.userId], version < known { return false }
        latest[status.userId] = version
        return true
    }
}
