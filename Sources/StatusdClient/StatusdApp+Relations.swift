/// Friendships (mutual) and blocks (SPEC §7).
extension StatusdApp {
    /// Adds mutual friendships; returns the user's friends after the change.
    @discardableResult
    public func addFriends(_ userId: String, _ friends: [String]) async throws -> [String] {
        try await unwrapped {
            try await client.addFriends(path: .init(appId: appId, userId: userId), body: .json(.init(userIds: friends))).ok.body.json.userIds
        }
    }

    @discardableResult
    public func removeFriends(_ userId: String, _ friends: [String]) async throws -> [String] {
        try await unwrapped {
            try await client.removeFriends(path: .init(appId: appId, userId: userId), body: .json(.init(userIds: friends))).ok.body.json.userIds
        }
    }

    public func getFriends(_ userId: String) async throws -> [String] {
        try await unwrapped { try await client.getFriends(path: .init(appId: appId, userId: userId)).ok.body.json.userIds }
    }

    @discardableResult
    public func addBlocks(_ userId: String, _ blocked: [String]) async throws -> BlockLists {
        try await unwrapped {
            try await client.addBlocks(path: .init(appId: appId, userId: userId), body: .json(.init(userIds: blocked))).ok.body.json
        }
    }

    @discardableResult
    public func removeBlocks(_ userId: String, _ blocked: [String]) async throws -> BlockLists {
        try await unwrapped {
            try await client.removeBlocks(path: .init(appId: appId, userId: userId), body: .json(.init(userIds: blocked))).ok.body.json
        }
    }

    /// `byMe`: users this user blocked; `me`: users who blocked this user; only the lists `direction` asks for.
    public func getBlocks(_ userId: String, direction: BlockDirection? = nil) async throws -> BlockLists {
        try await unwrapped {
            try await client.getBlocks(path: .init(appId: appId, userId: userId), query: .init(direction: direction)).ok.body.json
        }
    }
}
