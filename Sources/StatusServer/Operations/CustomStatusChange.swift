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
}
