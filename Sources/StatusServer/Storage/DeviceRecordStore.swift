import RedisClient

/// Reads of device records (``DeviceRecord``, in the user's devices hash) that happen outside a script: the
/// housekeeping checking a live session after its lease was lost, and the fan-out's audit after a gap in the bus feed.
struct DeviceRecordStore: Sendable {
    let redis: RedisClient

    /// One device's record, nil when it has none.
    func record(appId: String, userId: String, deviceId: String) async throws -> DeviceRecord? {
        let key = RedisKeys(appId: appId).user(userId).devices
        return DeviceRecord.decode(try await redis.send("HGET", key, deviceId))
    }

    /// What the audit of one user's sessions found: the records of the devices asked for, in their order, and whether
    /// the user still exists.
    struct Audit: Sendable {
        var records: [DeviceRecord?]
        var userExists: Bool
    }

    /// For each user, the records of `deviceIds` and whether the user still exists: one `HMGET` of the user's devices and
    /// one `EXISTS` of the profile per user, all in one pipeline. A user with no device asked for is skipped (and gets
    /// no entry).
    func audit(_ users: [(user: AppUser, deviceIds: [String])]) async throws -> [Audit] {
        var commands: [[String]] = []
        for (user, deviceIds) in users where !deviceIds.isEmpty {
            let keys = RedisKeys(appId: user.appId).user(user.userId)
            commands.append(["HMGET", keys.devices] + deviceIds)
            commands.append(["EXISTS", keys.profile])
        }
        let replies = try await redis.pipeline(commands)
        var audits: [Audit] = []
        var reply = 0
        for (_, deviceIds) in users where !deviceIds.isEmpty {
            let records = replies[reply].array ?? []
            audits.append(Audit(records: records.map(DeviceRecord.decode), userExists: replies[reply + 1].int == 1))
            reply += 2
        }
        return audits
    }
}
