import StatusCore

/// A user's profile (SPEC §7 `PUT /users/{userId}`), shown in listings next to the status.
struct UserProfile: Sendable, Hashable, Codable {
    var userId: String
    var name: String?
    var role: String?
    var tags: [String]?
    var metadata: JSONValue?
    var lastSeenPrivacy: LastSeenPrivacy?
    var createdAt: Int64?
    var updatedAt: Int64?
}

/// The body of `PUT /users/{userId}`.
struct UserProfileInput: Sendable, JSONRequestBody {
    static let members: StrictJSON.Members? = StrictJSON.Members(["name", "role", "tags", "metadata", "lastSeenPrivacy"])
    var name: String?
    var role: String?
    var tags: [String]?
    var metadata: JSONValue?
    var lastSeenPrivacy: LastSeenPrivacy?

    /// SPEC §1 profile limits.
    enum Limits {
        static let nameBytes = 256
        static let roleBytes = 64
        static let tags = 32
        static let tagBytes = 64
        static let metadataBytes = 8 * 1024
        static let metadataDepth = 16
    }

    /// Checks SPEC §1's limits: `name` ≤ 256 bytes, `role` ≤ 64 bytes, `tags` ≤ 32 strings of ≤ 64 bytes, `metadata` an
    /// object (or null, meaning none) of ≤ 8 KiB encoded and ≤ 16 levels deep (the object itself is level 1). The body's
    /// nesting was already bounded before decoding (``StrictJSON``), so these checks run on a small value.
    func validated() throws(StatusError) -> UserProfileInput {
        if let name, name.utf8.count > Limits.nameBytes { throw StatusError(.invalidRequest, "name is longer than 256 bytes") }
        if let role, role.utf8.count > Limits.roleBytes { throw StatusError(.invalidRequest, "role is longer than 64 bytes") }
        if let tags, tags.count > Limits.tags || tags.contains(where: { $0.utf8.count > Limits.tagBytes }) {
            throw StatusError(.invalidRequest, "at most 32 tags of at most 64 bytes")
        }
        if let metadata {
            switch metadata {
            case .null: break
            case .object:
                guard metadata.depth <= Limits.metadataDepth else {
                    throw StatusError(.invalidRequest, "metadata is nested deeper than 16 levels")
                }
                let encoded = (try? JSONCoding.encoder.encode(metadata).count) ?? Int.max
                guard encoded <= Limits.metadataBytes else { throw StatusError(.invalidRequest, "metadata is larger than 8 KiB encoded") }
            default: throw StatusError(.invalidRequest, "metadata must be an object")
            }
        }
        return self
    }
}
