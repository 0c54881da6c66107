import Foundation
import RedisClient
import StatusCore

/// Reads and writes user statuses through the lifecycle scripts (SPEC §2).
struct StatusRepository: Sendable {
    let redis: RedisClient
    let scripts: ScriptLibrary

    /// What a write did to a user's status.
    enum Change: Int, Sendable {
        /// Nothing changed.
        case none = 0
        /// `statusType` or `customStatus` changed (version +1): everyone entitled is notified.
        case status = 1
        /// Only `onlineDevices` changed: the user's own devices are told.
        case devices = 2
    }

    /// The outcome of a write: the new status and what changed.
    struct WriteResult: Sendable {
        var change: Change
        var reply: StatusReply
    }

    /// The outcome of removing devices.
    struct RemoveResult: Sendable {
        var change: Change
        /// The removed devices with what was stored for them.
        var removed: [(deviceId: String, record: DeviceRecord)]
        var reply: StatusReply
    }

    /// Statuses of many users in one round trip; users without a profile are left out.
    func statuses(appId: String, userIds: [String]) async throws -> [String: UserStatus] {
        guard !userIds.isEmpty else { return [:] }
        let replies = try await redis.pipeline(Self.statusReads(appId: appId, userIds: userIds))
        return try Self.statuses(userIds: userIds, from: replies[...])
    }

    /// The commands that read the statuses of `userIds` (three per user, each touching one user's keys only, so they
    /// can share a pipeline with other commands, or go to different shards).
    static func statusReads(appId: String, userIds: [String]) -> [[String]] {
        let keys = RedisKeys(appId: appId)
        var commands: [[String]] = []
        commands.reserveCapacity(userIds.count * 3)
        for userId in userIds {
            let user = keys.user(userId)
            commands.append(["EXISTS", user.profile])
            commands.append(["HMGET", user.status, "t", "cs", "la", "v"])
            commands.append(["HGETALL", user.devices])
        }
        return commands
    }

    /// Decodes the replies to ``statusReads(appId:userIds:)``.
    static func statuses(userIds: [String], from replies: ArraySlice<RedisValue>) throws -> [String: UserStatus] {
        guard replies.count == userIds.count * 3 else { throw StatusReplyError.malformed }
        var result: [String: UserStatus] = [:]
        result.reserveCapacity(userIds.count)
        for (index, userId) in userIds.enumerated() {
            let base = replies.startIndex + index * 3
            guard replies[base].int == 1, let fields = replies[base + 1].array, fields.count == 4 else { continue }
            var flat = fields.map { $0.isNull ? RedisValue.bulkString([]) : $0 }
            flat.append(.bulkString([]))
            let devices = replies[base + 2].array ?? []
            var index = 0
            while index + 1 < devices.count {
                if let platform = DeviceRecord.platform(devices[index + 1]) {
                    flat.append(devices[index])
                    flat.append(.bulkString(Array(platform.utf8)))
                }
                index += 2
            }
            result[userId] = try StatusReply(userId: userId, values: flat, offset: 0).status
        }
        return result
    }

    /// SPEC §4 setSelfStatus; `nil` clears. The script publishes the change itself.
    func setCustomStatus(appId: String, userId: String, value: String?) async throws -> WriteResult {
        let user = RedisKeys(appId: appId).user(userId)
        let reply = try await run(
            scripts.setCustomStatus,
            [user.status, user.profile, user.devices],
            [value ?? "", appId, userId, BusMessage.channel]
        )
        return WriteResult(
            change: Change(rawValue: Int(reply[0].int ?? 0)) ?? .none,
            reply: try StatusReply(userId: userId, values: reply, offset: 1)
        )
    }

    /// What a connect did besides the status: the device it replaced and the devices it kicked past
    /// `maxDevicesPerUser` (earliest connected first).
    struct ConnectResult: Sendable {
        var write: WriteResult
        var replaced: DeviceRecord?
        var kicked: [(deviceId: String, record: DeviceRecord)]
    }

    /// A device connects (`device_connect.lua`, which publishes the change).
    func connect(appId: String, userId: String, deviceId: String, record: DeviceRecord, maxDevices: Int) async throws -> ConnectResult {
        let user = RedisKeys(appId: appId).user(userId)
        let reply = try await run(
            scripts.deviceConnect,
            [user.status, user.profile, user.devices, user.subscriptions],
            [deviceId, try JSONCoding.string(record), String(maxDevices), appId, userId, BusMessage.channel]
        )
        let kickedCount = Int(reply[2].int ?? 0)
        var kicked: [(deviceId: String, record: DeviceRecord)] = []
        for index in 0..<kickedCount {
            guard let id = reply[3 + 2 * index].string, let record = DeviceRecord.decode(reply[4 + 2 * index]) else { continue }
            kicked.append((id, record))
        }
        let write = WriteResult(
            change: Change(rawValue: Int(reply[0].int ?? 0)) ?? .none,
            reply: try StatusReply(userId: userId, values: reply, offset: 3 + 2 * kickedCount)
        )
        return ConnectResult(write: write, replaced: DeviceRecord.decode(reply[1]), kicked: kicked)
    }

    /// A backend-driven device heartbeats; returns whether the device was connected, and the status.
    func heartbeat(appId: String, userId: String, deviceId: String) async throws -> (found: Bool, reply: StatusReply) {
        let user = RedisKeys(appId: appId).user(userId)
        let reply = try await run(scripts.deviceHeartbeat, [user.status, user.profile, user.devices], [deviceId])
        return (reply[0].int == 1, try StatusReply(userId: userId, values: reply, offset: 1))
    }

    /// Removes devices (all when `deviceIds` is empty). `connectionId` limits removal to that connection's record;
    /// `staleBefore` to devices whose last heartbeat is older.
    func remove(
        appId: String,
        userId: String,
        deviceIds: [String],
        leavingAs mode: StatusType,
        retentionSeconds: Int,
        connectionId: String? = nil,
        staleBefore: Int64? = nil
    ) async throws -> RemoveResult {
        let user = RedisKeys(appId: appId).user(userId)
        let arguments =
            [mode.rawValue, String(Int64(retentionSeconds) * 1000), connectionId ?? "", staleBefore.map(String.init) ?? ""]
            + [appId, userId, BusMessage.channel] + deviceIds
        let reply = try await run(scripts.devicesRemove, [user.status, user.profile, user.devices, user.subscriptions], arguments)
        let count = Int(reply[1].int ?? 0)
        var removed: [(String, DeviceRecord)] = []
        for index in 0..<count {
            if let id = reply[2 + index * 2].string, let record = DeviceRecord.decode(reply[3 + index * 2]) { removed.append((id, record)) }
        }
        return RemoveResult(
            change: Change(rawValue: Int(reply[0].int ?? 0)) ?? .none,
            removed: removed,
            reply: try StatusReply(userId: userId, values: reply, offset: 2 + count * 2)
        )
    }

    /// Keeps the app's online index in step with a user's status (applied in version order).
    func index(appId: String, status: UserStatus) async throws {
        let keys = RedisKeys(appId: appId)
        _ = try await redis.evalScript(
            scripts.presenceIndex,
            keys: [keys.online, keys.onlineVersions],
            arguments: [status.userId, String(status.version), status.statusType == .online ? "1" : "0"]
        )
    }

    private func run(_ script: RedisScript, _ keys: [String], _ arguments: [String]) async throws -> [RedisValue] {
        do {
            guard let values = try await redis.evalScript(script, keys: keys, arguments: arguments).array else {
                throw StatusReplyError.malformed
            }
            return values
        } catch let error as RedisClientError where error.kind == .server && error.message.contains("USER_NOT_FOUND") {
            throw StatusError(.userNotFound, "user not found")
        }
    }
}
