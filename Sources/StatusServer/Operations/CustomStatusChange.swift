import StatusCore

/// What a setSelfStatus does to the custom status: SPEC §4, a field left out keeps its value; `null` or `""` clears it.
enum CustomStatusChange: Sendable, Equatable {
    /// The request did not name `customStatus`.
    case keep
    /// The request set it to this value (nil when it was `null`).
    case set(String?)
}

/// The fields of setSelfStatus shared by both transports.
enum SetSelfStatusFields {
    /// SPEC §10.1: an availability left out keeps it; a given one must be a string naming one of the five
    /// (`INVALID_REQUEST` otherwise, null included).
    static func availability(present: Bool, _ value: String?) throws(StatusError) -> Availability? {
        guard present else { return nil }
        guard let value else { throw StatusError(.invalidRequest, "availability must be a string") }
        return try Availability.parse(value)
    }

    /// The longest `clearAfterSeconds` (SPEC §10.2): a week.
    static let maxClearAfterSeconds = 604_800

    /// SPEC §10.2: when a custom status set with `clearAfterSeconds` clears itself (epoch ms), nil without one. It goes
    /// with a custom status being set (a non-empty `customStatus` in the same call): alone, with a clearing, or outside
    /// 1...604,800 it is `INVALID_REQUEST`.
    static func expiresAt(clearAfterSeconds: Int?, customStatus: String?, nowMs: Int64) throws(StatusError) -> Int64? {
        guard let clearAfterSeconds else { return nil }
        guard (1...maxClearAfterSeconds).contains(clearAfterSeconds) else {
            throw StatusError(.invalidRequest, "clearAfterSeconds must be 1 to \(maxClearAfterSeconds)")
        }
        guard let customStatus, !customStatus.isEmpty else {
            throw StatusError(.invalidRequest, "clearAfterSeconds needs a customStatus to clear")
        }
        return nowMs + Int64(clearAfterSeconds) * 1000
    }
}
