import StatusCore

/// A user's profile (SPEC §7 `PUT /users/{userId}`), shown in listings next to the status.
struct UserProfile: Sendable, Hashable, Codable {
    var userId: String
    var name: String?
    var role: String?
    var tags: [String]?
    var metadata: JSONValue?
    var createdAt: Int64?
    var updatedAt: Int64?
}

/// The body of `PUT /users/{userId}`.
struct UserProfileInput: Sendable, Decodable {
    var name: String?
    var role: String?
    var tags: [String]?
    var metadata: JSONValue?

    /// Checks sizes and shapes: name ≤ 256 bytes, role 1–64 chars of an id (so `roles:` scopes can name it), tags ≤ 100
    /// strings, metadata an object.
    func validated() throws(StatusError) -> UserProfileInput {
        if let name, name.utf8.count > 256 { throw StatusError(.invalidRequest, "name is longer than 256 bytes") }
        if let role, !Identifiers.isValidDeviceId(role) { throw StatusError(.invalidRequest, "role must be 1-64 chars of A-Z a-z 0-9 _ -") }
        if let tags, tags.count > 100 || tags.contains(where: { $0.utf8.count > 128 }) {
            throw StatusError(.invalidRequest, "at most 100 tags of at most 128 bytes")
        }
        if let metadata {
            switch metadata {
            case .object, .null: break
            default: throw StatusError(.invalidRequest, "metadata must be an object")
            }
        }
        return self
    }
}
