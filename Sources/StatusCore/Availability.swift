/// What a user chose to show besides their connections (SPEC §10.1): their standing choice, kept across offline periods
/// and devices.
public enum Availability: String, Sendable, Hashable, Codable, CaseIterable {
    case available
    case away
    case busy
    case dnd
    case invisible

    /// The value a request names; an unknown one is `INVALID_REQUEST`.
    public static func parse(_ value: String) throws(StatusError) -> Availability {
        guard let availability = Availability(rawValue: value) else {
            throw StatusError(.invalidRequest, "availability must be one of available, away, busy, dnd, invisible")
        }
        return availability
    }
}
