import Foundation
import RedisClient
import StatusCore

/// Users, their profiles and their relationships (SPEC §7 server API: users, friends, blocks).
///
/// Relationships are mirrored in each user's own hash slot (`friends`, `blocks`, `blockedby`), so any check about one
/// user reads that user's slot only. Work that spans users is one command per user, the actor's side first.
struct UserDirectory: Sendable {
    let redis: RedisClient
    let scripts: ScriptLibrary
    /// The node's wall time, written as a profile's creation and update times.
    let clock: any NodeClock

    /// Creates or replaces a profile, and indexes the user in the app.
    func put(appId: String, userId: String, input: UserProfileInput) async throws -> UserProfile {
        let keys = RedisKeys(appId: appId)
        var fields: [(name: String, value: String)] = []
        if let name = input.name { fields.append(("name", name)) }
        if let role = input.role { fields.append(("role", role)) }
        if let tags = input.tags { fields.append(("tags", try JSONCoding.string(tags))) }
        if let metadata = input.metadata, metadata != .null { fields.append(("metadata", try JSONCoding.string(metadata))) }
        if let privacy = input.lastSeenPrivacy { fields.append(("lastSeenPrivacy", privacy.rawValue)) }
        _ = try await ScriptRunner(redis: redis, scripts: scripts).run(
            ProfilePut.self,
            keys: .init(user: keys.user(userId)),
            arguments: .init(nowMs: clock.nowMs, generation: UUID().uuidString, fields: fields)
        )
        _ = try await redis.send("ZADD", keys.users, "0", userId)
        return try await require(appId: appId, userId: userId)
    }

    /// The profile; throws `USER_NOT_FOUND`.
    func require(appId: String, userId: String) async throws -> UserProfile {
        let reply = try await redis.send("HGETALL", RedisKeys(appId: appId).user(userId).profile)
        guard let profile = Self.profile(userId: userId, reply: reply) else {
            throw StatusError(.userNotFound, "user \(userId) not found")
        }
        return profile
    }

    /// Throws `USER_NOT_FOUND` unless the user exists.
    func requireExists(appId: String, userId: String) async throws {
        let exists = try await redis.send("EXISTS", RedisKeys(appId: appId).user(userId).profile)
        guard exists.int == 1 else { throw StatusError(.userNotFound, "user \(userId) not found") }
    }

    /// Throws `USER_NOT_FOUND` unless the user exists, else the reply of `read`, a read of the user's own keys: both
    /// in one round trip (one pipeline; the user's keys share a hash slot). A read that fails is thrown.
    func requireExists(appId: String, userId: String, thenRead read: [String]) async throws -> RedisValue {
        let replies = try await redis.pipeline([["EXISTS", RedisKeys(appId: appId).user(userId).profile], read])
        guard replies.count == 2, replies[0].int == 1 else { throw StatusError(.userNotFound, "user \(userId) not found") }
        if case .error(let message) = replies[1] {
            throw RedisClientError(kind: .server, message: message)
        }
        return replies[1]
    }

    /// The user's token generation (SPEC §7: a user created again needs new tokens): a random value set when the
    /// profile is created, or the creation time for profiles created before generations existed; nil when the user
    /// does not exist.
    func tokenGeneration(appId: String, userId: String) async throws -> String? {
        let reply = try await redis.send("HMGET", RedisKeys(appId: appId).user(userId).profile, "gen", "createdAt")
        guard let values = reply.array, values.count == 2 else { return nil }
        return values[0].string ?? values[1].string
    }

    /// Which of `userIds` exist, in one round trip.
    func existing(appId: String, userIds: [String]) async throws -> Set<String> {
        guard !userIds.isEmpty else { return [] }
        let keys = RedisKeys(appId: appId)
        let replies = try await redis.pipeline(userIds.map { ["EXISTS", keys.user($0).profile] })
        return Set(zip(userIds, replies).compactMap { $1.int == 1 ? $0 : nil })
    }

    /// Profiles of many users in one round trip (missing users are left out).
    func profiles(appId: String, userIds: [String]) async throws -> [String: UserProfile] {
        guard !userIds.isEmpty else { return [:] }
        let keys = RedisKeys(appId: appId)
        let replies = try await redis.pipeline(userIds.map { ["HGETALL", keys.user($0).profile] })
        var result: [String: UserProfile] = [:]
        for (userId, reply) in zip(userIds, replies) {
            if let profile = Self.profile(userId: userId, reply: reply) { result[userId] = profile }
        }
        return result
    }

    /// Throws `USER_NOT_FOUND` unless the user exists, or a deletion of theirs stopped after its first step (the
    /// profile gone, other keys of theirs left: Redis failed the request midway), which the next DELETE then finishes.
    /// One `EXISTS` of every key of the user, the profile among them (the user's keys share a hash slot).
    func requireDeletable(appId: String, userId: String) async throws {
        let left = try await redis.send(["EXISTS"] + RedisKeys(appId: appId).user(userId).all)
        guard (left.int ?? 0) > 0 else { throw StatusError(.userNotFound, "user \(userId) not found") }
    }

    /// Deletes the user's profile alone, the first step of a deletion: from then on the user does not exist (SPEC §7
    /// `USER_NOT_FOUND`), while their devices and relationships are removed by the next steps.
    func deleteProfile(appId: String, userId: String) async throws {
        _ = try await redis.send("DEL", RedisKeys(appId: appId).user(userId).profile)
    }

    /// Deletes the user's keys (their versions kept, ``StatusRetire``), removes them from the others' relationship sets,
    /// removes every other user's subscription to them (found through the reverse index ``UserKeys/subscribers``, SPEC
    /// §7), and removes them from the app's indexes. Returns the user's friends, the users on either side of a block
    /// and their subscribers, whose nodes must forget the user.
    func delete(appId: String, userId: String) async throws -> Set<String> {
        let keys = RedisKeys(appId: appId)
        let user = keys.user(userId)
        let replies = try await redis.pipeline([
            ["SMEMBERS", user.friends], ["SMEMBERS", user.blocks], ["SMEMBERS", user.blockedBy], ["ZRANGE", user.subscribers, "0", "-1"],
            ["ZRANGE", user.subscriptions, "0", "-1"], ["SMEMBERS", user.legacySubscribers],
        ])
        let friends = replies[0].array?.compactMap(\.string) ?? []
        let blocks = replies[1].array?.compactMap(\.string) ?? []
        let blockedBy = replies[2].array?.compactMap(\.string) ?? []
        let subscribers = Array(Set((replies[3].array ?? []) + (replies[5].array ?? [])).compactMap(\.string))
        let targets = replies[4].array?.compactMap(\.string) ?? []
        // The status hash goes with its versions kept, for a user created again under the id (SPEC §10.5).
        let retire = StatusRetire.Arguments(appId: appId, userId: userId)
        _ = try await ScriptRunner(redis: redis, scripts: scripts).run(StatusRetire.self, keys: .init(user: user), arguments: retire)
        _ = try await redis.send(["DEL"] + user.all)
        var commands: [[String]] = [["ZREM", keys.users, userId], ["ZREM", keys.online, userId], ["HDEL", keys.onlineVersions, userId]]
        commands += friends.map { ["SREM", keys.user($0).friends, userId] }
        commands += blocks.map { ["SREM", keys.user($0).blockedBy, userId] }
        commands += blockedBy.map { ["SREM", keys.user($0).blocks, userId] }
        commands += (blocks + blockedBy).map { ["HDEL", keys.user($0).blockVersions, userId] }
        commands += (blocks + blockedBy).map { ["HDEL", keys.user($0).status, "bk:" + userId] }
        commands += subscribers.map { ["ZREM", keys.user($0).subscriptions, userId] }
        commands += targets.map { ["ZREM", keys.user($0).subscribers, userId] }
        commands += targets.map { ["SREM", keys.user($0).legacySubscribers, userId] }
        _ = try await redis.pipeline(commands)
        return Set(friends + blocks + blockedBy + subscribers)
    }

    /// Records `subscriberId` in each target's reverse index, before the subscription itself is written. The index is a
    /// superset of the real subscribers and is never trimmed on unsubscribe or eviction (a removal there could race a
    /// concurrent re-subscription of the same user and lose an entry); a stale entry costs one no-op `ZREM` when the
    /// target is deleted, and the entries of a deleted subscriber are removed with it.
    func addSubscriber(appId: String, subscriberId: String, targetIds: [String]) async throws {
        guard !targetIds.isEmpty else { return }
        let keys = RedisKeys(appId: appId)
        _ = try await redis.pipeline(targetIds.map { ["ZADD", keys.user($0).subscribers, "0", subscriberId] })
    }

    /// Adds mutual friendships.
    func addFriends(appId: String, userId: String, friendIds: [String]) async throws {
        guard !friendIds.isEmpty else { return }
        let keys = RedisKeys(appId: appId)
        _ = try await redis.send(["SADD", keys.user(userId).friends] + friendIds)
        _ = try await redis.pipeline(friendIds.map { ["SADD", keys.user($0).friends, userId] })
    }

    /// Removes mutual friendships.
    func removeFriends(appId: String, userId: String, friendIds: [String]) async throws {
        guard !friendIds.isEmpty else { return }
        let keys = RedisKeys(appId: appId)
        _ = try await redis.send(["SREM", keys.user(userId).friends] + friendIds)
        _ = try await redis.pipeline(friendIds.map { ["SREM", keys.user($0).friends, userId] })
    }

    /// The user's friends, sorted.
    func friends(appId: String, userId: String) async throws -> [String] {
        try await members(RedisKeys(appId: appId).user(userId).friends)
    }

    /// The user's friends, sorted; `USER_NOT_FOUND` unless the user exists. One round trip.
    func requireFriends(appId: String, userId: String) async throws -> [String] {
        Self.sorted(try await requireExists(appId: appId, userId: userId, thenRead: ["SMEMBERS", RedisKeys(appId: appId).user(userId).friends]))
    }

    /// Blocks users (SPEC §4, §10.5), one `block_side.lua` per side, each in that side's slot: the blocker's side first
    /// (their half, the freeze of their public version for each target, the start of the mask on their channels), then
    /// each target's. Each side's freeze is taken and announced in the same step as its half is written, so whatever a
    /// side published before it is not above the version the other side is shown from then on, and a node stops
    /// showing that side where it hears the announcement, in order with its changes (FanoutService).
    func addBlocks(appId: String, userId: String, targetIds: [String]) async throws {
        try await sides(.block, appId: appId, userId: userId, targetIds: targetIds)
    }

    /// Unblocks users: the blocker's side first, then each target's; a side whose pair is no longer blocked either way
    /// drops its freeze and announces the end of the mask.
    func removeBlocks(appId: String, userId: String, targetIds: [String]) async throws {
        try await sides(.unblock, appId: appId, userId: userId, targetIds: targetIds)
        // Versions kept on the other side's keys by earlier versions of the service, for a pair no longer blocked.
        let keys = RedisKeys(appId: appId)
        let still = try await redis.send(["SMISMEMBER", keys.user(userId).blockedBy] + targetIds).array ?? []
        var writes: [[String]] = []
        for (target, flag) in zip(targetIds, still) where flag.int != 1 {
            writes.append(["HDEL", keys.user(userId).blockVersions, target])
            writes.append(["HDEL", keys.user(target).blockVersions, userId])
        }
        if !writes.isEmpty { _ = try await redis.pipeline(writes) }
    }

    private func sides(_ mode: BlockSide.Mode, appId: String, userId: String, targetIds: [String]) async throws {
        guard !targetIds.isEmpty else { return }
        let keys = RedisKeys(appId: appId)
        let runner = ScriptRunner(redis: redis, scripts: scripts)
        func side(_ user: String, _ half: BlockSide.Half, _ other: String) throws -> [String] {
            try runner.command(
                BlockSide.self,
                keys: .init(user: keys.user(user)),
                arguments: .init(mode: mode, half: half, other: other, appId: appId, userId: user)
            )
        }
        let own = try targetIds.map { try side(userId, .byMe, $0) }
        try Self.requireAll(try await runner.pipeline(own, loading: [BlockSide.self]))
        let theirs = try targetIds.map { try side($0, .me, userId) }
        try Self.requireAll(try await runner.pipeline(theirs, loading: [BlockSide.self]))
    }

    private static func requireAll(_ replies: [RedisValue]) throws {
        for reply in replies { _ = try ScriptRunner.decode(BlockSide.self, reply) }
    }

    /// Users the user blocked, and users who blocked the user, sorted.
    func blocks(appId: String, userId: String) async throws -> (byMe: [String], me: [String]) {
        let user = RedisKeys(appId: appId).user(userId)
        return (try await members(user.blocks), try await members(user.blockedBy))
    }

    /// A page of the app's users in id order after `cursor`.
    func page(appId: String, after cursor: String?, count: Int) async throws -> [String] {
        let start = cursor.map { "(" + $0 } ?? "-"
        let reply = try await redis.send("ZRANGEBYLEX", RedisKeys(appId: appId).users, start, "+", "LIMIT", "0", String(count))
        return reply.array?.compactMap(\.string) ?? []
    }

    private func members(_ key: String) async throws -> [String] {
        Self.sorted(try await redis.send("SMEMBERS", key))
    }

    /// The members of an `SMEMBERS` reply, sorted.
    private static func sorted(_ members: RedisValue) -> [String] {
        (members.array?.compactMap(\.string) ?? []).sorted()
    }

    private static func profile(userId: String, reply: RedisValue) -> UserProfile? {
        guard let values = reply.array, !values.isEmpty else { return nil }
        var fields: [String: String] = [:]
        var index = 0
        while index + 1 < values.count {
            if let key = values[index].string, let value = values[index + 1].string { fields[key] = value }
            index += 2
        }
        return UserProfile(
            userId: userId,
            name: fields["name"],
            role: fields["role"],
            tags: fields["tags"].flatMap { try? JSONCoding.decoder.decode([String].self, from: Data($0.utf8)) },
            metadata: fields["metadata"].flatMap { try? JSONCoding.decoder.decode(JSONValue.self, from: Data($0.utf8)) },
            lastSeenPrivacy: fields["lastSeenPrivacy"].flatMap(LastSeenPrivacy.init(rawValue:)),
            createdAt: fields["createdAt"].flatMap { Int64($0) },
            updatedAt: fields["updatedAt"].flatMap { Int64($0) }
        )
    }
}
