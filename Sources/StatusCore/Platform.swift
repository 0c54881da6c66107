/// A device platform (SPEC §1).
public enum Platform: String, Sendable, Hashable, Codable, CaseIterable {
    case ios
    case android
    case ipad
    case web
    case windows
    case macos
    case linux
    case other

    /// Parses a platform, throwing `INVALID_REQUEST` for anything else.
    public static func parse(_ value: String) throws(StatusError) -> Platform {
        guard let platform = Platform(rawValue: value) else {
            throw StatusError(.invalidRequest, "platform must be one of \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return platform
    }
}
