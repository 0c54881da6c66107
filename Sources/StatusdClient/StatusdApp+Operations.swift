/// The four operations of SPEC §4 acting for a user, the listing of subscriptions, and the backend's own query.
extension StatusdApp {
    /// setSelfStatus: `customStatus` nil keeps it and `""` clears it; `availability` nil keeps it; `clearAfterSeconds`
    /// makes a new custom status clear itself. Returns the new status object.
    @discardableResult
    public func setSelfStatus(
        _ userId: String,
        customStatus: String? = nil,
        availability: Availability? = nil,
        clearAfterSeconds: Int? = nil
    ) async throws -> UserStatus {
        try await unwrapped {
            let body = SetStatusRequest(customStatus: customStatus, availability: availability, clearAfterSeconds: clearAfterSeconds)
            return try await client.setSelfStatus(path: .init(appId: appId, userId: userId), body: .json(body)).ok.body.json
        }
    }

    /// getUserStatus of `userIds` as `userId` sees them (rate-limited unless only themselves).
    public func getUserStatus(_ userIds: [String], as userId: String) async throws -> StatusQueryResult {
        try await unwrapped {
            try await client.getUserStatus(path: .init(appId: appId, userId: userId), body: .json(.init(userIds: userIds))).ok.body.json
        }
    }

    /// subscribeUserStatus for `userId`; the result holds the current statuses of the users subscribed to.
    @discardableResult
    public func subscribeUserStatus(_ userIds: [String], for userId: String) async throws -> SubscribeResult {
        try await unwrapped {
            try await client.subscribeUserStatus(path: .init(appId: appId, userId: userId), body: .json(.init(userIds: userIds))).ok.body.json
        }
    }

    /// unsubscribeUserStatus for `userId`; nil removes every subscription.
    @discardableResult
    public func unsubscribeUserStatus(_ userIds: [String]?, for userId: String) async throws -> UnsubscribeResult {
        try await unwrapped {
            try await client.unsubscribeUserStatus(path: .init(appId: appId, userId: userId), body: .json(.init(userIds: userIds))).ok.body
                .json
        }
    }

    /// The user's subscriptions, oldest first.
    public func listSubscriptions(_ userId: String) async throws -> [String] {
        try await unwrapped { try await client.listSubscriptions(path: .init(appId: appId, userId: userId)).ok.body.json.userIds }
    }

    /// The app's own view of anyone's status: no user rate limit, no plan gating, no blocks; devices when `detail`.
    public func backendQuery(_ userIds: [String], detail: Bool = false) async throws -> StatusQueryResult {
        try await unwrapped {
            try await client.backendQuery(path: .init(appId: appId), body: .json(.init(userIds: userIds, detail: detail))).ok.body.json
        }
    }
}
