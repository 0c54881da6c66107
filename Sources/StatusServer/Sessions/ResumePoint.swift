/// SPEC §7 resume: the moment from which a reconnecting device is brought up to date, and the rules that find it.
///
/// The welcome's `resume` token is the session's connection id (random, opaque to the device). When the session loses
/// its socket, the node stores a resume point under the user and device (``UserKeys/resume(_:)``) that expires after
/// `heartbeatTimeoutSeconds`. A reconnect presenting the token is then sent, right after its welcome, the current status
/// of every user it may hear about whose version moved since ``lostAt``. The token grants nothing by itself: what is
/// sent is decided by the new session's own rights, so a guessed or altered token at most repeats current statuses
/// the device may read anyway.
struct ResumePoint: Sendable, Equatable {
    /// The connection id of the session that lost its socket (its `resume` token).
    var connection: String
    /// Epoch ms from which changes are resent: the session's last sign of life, less ``clockMargin``.
    var lostAt: Int64

    /// Subtracted from every moment a node measures, so that a node clock slightly ahead of Redis's (which stamps
    /// version changes) never makes a change look older than the loss. Resending a status the device had is harmless
    /// (same version, SPEC §2); missing one is not.
    static let clockMargin: Int64 = 1000

    /// The longest token accepted; anything longer, or with other characters than a connection id has, is ignored.
    static let maxTokenLength = 64

    /// The stored form, `"<connection> <lostAt>"`.
    var stored: String { "\(connection) \(lostAt)" }

    init(connection: String, lostAt: Int64) {
        self.connection = connection
        self.lostAt = lostAt
    }

    /// Parses the stored form; nil when it is not one.
    init?(stored: String) {
        let parts = stored.split(separator: " ")
        guard parts.count == 2, let lostAt = Int64(parts[1]) else { return nil }
        self.connection = String(parts[0])
        self.lostAt = lostAt
    }

    /// Whether `token` could be a connection id at all (letters, digits, `-`; 1–64 chars): others are ignored unread.
    static func isPlausible(token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= maxTokenLength
            && token.utf8.allSatisfy { $0 == UInt8(ascii: "-") || ($0 >= 48 && $0 <= 57) || (($0 | 0x20) >= 97 && ($0 | 0x20) <= 122) }
    }

    /// The moment a device presenting `token` resumes from, or nil (a plain connect).
    ///
    /// - `stored`: the resume point recorded when the session's departure was filed, if it has not expired;
    /// - `replaced`: the record this connect replaced under the same deviceId. When it is still the token's connection,
    ///   its departure was never filed (its node died or has not noticed yet): the device is brought up to date from
    ///   when that connection was made.
    static func since(token: String, stored: ResumePoint?, replaced: DeviceRecord?) -> Int64? {
        if let stored, stored.connection == token { return stored.lostAt }
        if let replaced, replaced.kind == .webSocket, replaced.connection == token, let connectedAt = replaced.connectedAt {
            return connectedAt - clockMargin
        }
        return nil
    }

    /// Whether a status whose version last moved at `versionTime` changed while the device was away (a status that
    /// last moved before version times were recorded did not).
    static func moved(versionTime: Int64?, since: Int64) -> Bool {
        guard let versionTime else { return false }
        return versionTime >= since
    }
}
