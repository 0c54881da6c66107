import StatusCore

/// The result of getUserStatus and of the backend query.
struct StatusQueryResult: Sendable, Codable {
    var statuses: [UserStatus]
    var failures: [UserFailure]

    /// One user's status, while a result is put together.
    struct Entry: Sendable {
        var userId: String
        var status: UserStatus
    }
}

/// The result of subscribeUserStatus.
struct SubscribeResult: Sendable, Codable {
    var subscribed: [String]
    var evicted: [String]
    var failures: [UserFailure]
    /// The status of each user in `subscribed`, as the caller may see it (SPEC §4), so that no query is needed to
    /// show them.
    var statuses: [UserStatus]
}

/// The result of unsubscribeUserStatus.
struct UnsubscribeResult: Sendable, Codable {
    var unsubscribed: [String]
}

/// A `{"userIds": [...]}` body or result.
struct UserIdList: Sendable, Codable {
    var userIds: [String]
}

/// One entry of the presence listing: a status object plus the profile fields.
struct ListedUser: Sendable, Codable {
    var status: UserStatus
    var profile: UserProfile?

    func encode(to encoder: any Encoder) throws {
        try status.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(profile?.name, forKey: .name)
        try container.encodeIfPresent(profile?.role, forKey: .role)
        try container.encodeIfPresent(profile?.tags, forKey: .tags)
        try container.encodeIfPresent(profile?.metadata, forKey: .metadata)
    }

    init(status: UserStatus, profile: UserProfile?) {
        self.status = status
        self.profile = profile
    }

    init(from decoder: any Decoder) throws {
        self.status = try UserStatus(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.profile = UserProfile(
            userId: status.userId,
            name: try container.decodeIfPresent(String.self, forKey: .name),
            role: try container.decodeIfPresent(String.self, forKey: .role),
            tags: try container.decodeIfPresent([String].self, forKey: .tags),
            metadata: try container.decodeIfPresent(JSONValue.self, forKey: .metadata)
        )
    }

    enum CodingKeys: String, CodingKey {
        case name
        case role
        case tags
        case metadata
    }
}

/// A page of the presence listing.
struct UserPage: Sendable, Codable {
    var users: [ListedUser]
    var cursor: String?

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(users, forKey: .users)
        try container.encode(cursor, forKey: .cursor)
    }
}
