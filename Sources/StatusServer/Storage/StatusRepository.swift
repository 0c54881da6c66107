import Foundation
import RedisClient
import StatusCore

/// Reads and writes user statuses through the lifecycle scripts (SPEC §2).
struct StatusRepository: Sendable {
    let redis: RedisClient
    let scripts: ScriptLibrary
    /// The node's wall time, for the log of recent changes and the estimated end of a grace.
    let clock: any NodeClock

    private var runner: ScriptRunner { ScriptRunner(redis: redis, scripts: scripts) }
    private var dueIndexes: DueIndexStore { DueIndexStore(runner: runner) }

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
        /// Whether the user left `online` with a custom status, which went with it (SPEC §2).
        var clearedCustomStatus: Bool
        /// The removed devices with what was stored for them.
        var removed: [(deviceId: String, record: DeviceRecord)]
        var reply: StatusReply
    }

    /// Whether every key is on one server, so that one script may write keys of several hash slots
    /// (``DeviceConnect/Alongside``); false on a cluster, and while Redis cannot tell.
    func isSingleServer() async -> Bool {
        (try? await redis.isCluster()) == false
    }

    /// Statuses of many users in one round trip; users without a profile are left out.
    func statuses(appId: String, userIds: [String]) async throws -> [String: UserStatus] {
        try await stored(appId: appId, userIds: userIds).mapValues(\.status)
    }

    /// Statuses of many users with their role, privacy and version time, in one round trip (two when some status hash
    /// has no read copy yet); `friends`, when given, says for each of `userIds` whether it is the viewer's friend.
    /// Users without a profile are left out.
    /// `viewer`, when given, is whom the read is for: each status comes with its freeze for them, where a block between
    /// them began (``StoredStatus/frozenForViewer``).
    func stored(appId: String, userIds: [String], friends: [Bool]? = nil, viewer: String? = nil) async throws -> [String: StoredStatus] {
        guard !userIds.isEmpty else { return [:] }
        let replies = try await redis.pipeline(Self.statusReads(appId: appId, userIds: userIds, viewer: viewer))
        return try await completed(Self.stored(userIds: userIds, friends: friends, viewer: viewer, from: replies[...]), appId: appId)
    }

    /// What deleted users left (SPEC §10.5, `status_retire.lua`), each as a user created again under the id would
    /// start: `unlogined` at the kept versions, with the role the deleted user had; a user of whom nothing is kept
    /// (created again meanwhile, or never changed) is left out. One `HMGET` each in one round trip.
    func retired(appId: String, userIds: [String]) async throws -> [String: StoredStatus] {
        let keys = RedisKeys(appId: appId)
        let replies = try await redis.pipeline(userIds.map { ["HMGET", keys.user($0).retiredVersions, "v", "pv", "r"] })
        var retired: [String: StoredStatus] = [:]
        for (userId, reply) in zip(userIds, replies) {
            if case .error(let message) = reply { throw RedisClientError(kind: .server, message: message) }
            guard let fields = reply.array, fields.count == 3, let version = fields[0].int else { continue }
            let fresh = StatusFields(
                type: .unlogined,
                custom: nil,
                lastActive: nil,
                version: version,
                privacy: nil,
                availability: nil,
                publicVersion: fields[1].int,
                hiddenType: nil,
                hiddenLastActive: nil,
                expiresAt: nil
            )
            let record = fresh.record(userId: userId, devices: [])
            retired[userId] = StoredStatus(record: record, role: fields[2].string, versionTime: nil, publicVersionTime: nil, viewerIsFriend: nil)
        }
        return retired
    }

    /// Each user's current public version (SPEC §10.5: what others are shown; their `version` when they have none yet,
    /// 0 for a user with neither), one `HMGET` each in one round trip: where a relationship change starts from
    /// (``BusMessage/relationsChanged(appId:userIds:since:)``).
    func versions(appId: String, userIds: [String]) async throws -> [String: Int64] {
        let keys = RedisKeys(appId: appId)
        let replies = try await redis.pipeline(userIds.map { ["HMGET", keys.user($0).status, "pv", "v"] })
        var versions: [String: Int64] = [:]
        for (userId, reply) in zip(userIds, replies) {
            if case .error(let message) = reply { throw RedisClientError(kind: .server, message: message) }
            let fields = reply.array ?? []
            versions[userId] = fields.lazy.compactMap { $0.string.flatMap { Int64($0) } }.first ?? 0
        }
        return versions
    }

    /// The public versions that `viewer` is shown of the users on either side of a block with them, each as it stood
    /// when the block began (SPEC §10.5, ``UserKeys/blockVersions``): one `HGETALL` of the viewer's own keys.
    func blockVersions(appId: String, viewer: String) async throws -> [String: Int64] {
        let fields = try await redis.send("HGETALL", RedisKeys(appId: appId).user(viewer).blockVersions).array ?? []
        var versions: [String: Int64] = [:]
        for index in stride(from: 0, to: fields.count - 1, by: 2) {
            if let userId = fields[index].string, let version = fields[index + 1].string.flatMap({ Int64($0) }) {
                versions[userId] = version
            }
        }
        return versions
    }

    /// The commands that read the statuses of `userIds`: one `HMGET` of ``readFields`` per user, each touching one
    /// user's keys only, so they can share a pipeline with other commands, or go to different shards. (Which of them
    /// are a viewer's friends is asked on the viewer's keys, by `query_rate_limit.lua`.) For a `viewer`, each `HMGET`
    /// also reads the user's freeze for them (`bk:<viewer>`, `block_side.lua`) in the same step as the status, so
    /// that a read never shows a public version above the one a block that began before it froze.
    static func statusReads(appId: String, userIds: [String], viewer: String? = nil) -> [[String]] {
        let keys = RedisKeys(appId: appId)
        var commands: [[String]] = []
        commands.reserveCapacity(userIds.count)
        var template = readCommandTemplate
        if let viewer { template.append(freezeField(for: viewer)) }
        for userId in userIds {
            // One allocation per command: the template is copied whole and only its key is replaced.
            var command = template
            command[1] = keys.user(userId).status
            commands.append(command)
        }
        return commands
    }

    /// The field of a user's status hash that holds their public version frozen for `viewer` while a block between
    /// them lasts (SPEC §10.5).
    static func freezeField(for viewer: String) -> String { "bk:" + viewer }

    /// `HMGET <key> readFields...`, with the key left empty.
    private static let readCommandTemplate = ["HMGET", ""] + readFields

    /// What the commands of ``statusReads(appId:userIds:)`` found.
    struct StatusReads: Sendable {
        /// The users whose status was read.
        var found: [String: StoredStatus]
        /// The users whose status hash has no read copy, with whether each is the viewer's friend: each does not
        /// exist, or was last written by an earlier version. ``completed(_:appId:)`` reads them.
        var withoutCopy: [(userId: String, viewerIsFriend: Bool?)]
        /// Whom the reads were made for (their freezes were read too).
        var viewer: String? = nil
    }

    /// Decodes the replies to ``statusReads(appId:userIds:)``; `friends` as for ``stored(appId:userIds:friends:)``.
    static func stored(
        userIds: [String],
        friends: [Bool]? = nil,
        viewer: String? = nil,
        from replies: ArraySlice<RedisValue>
    ) throws -> StatusReads {
        guard replies.count == userIds.count, friends.map({ $0.count == userIds.count }) ?? true else {
            throw StatusReplyError.malformed
        }
        var reads = StatusReads(found: [:], withoutCopy: [], viewer: viewer)
        reads.found.reserveCapacity(userIds.count)
        for (index, userId) in userIds.enumerated() {
            let isFriend = friends?[index]
            let fields = replies[replies.startIndex + index]
            if let stored = try decode(userId: userId, fields: fields, viewerIsFriend: isFriend, withFreeze: viewer != nil) {
                reads.found[userId] = stored
            } else {
                reads.withoutCopy.append((userId, isFriend))
            }
        }
        return reads
    }

    /// Completes `reads`: the users without a read copy are read with `status_read_copy.lua`, which writes the copy
    /// first (so each such user costs this second round trip once), and leaves out users that do not exist.
    func completed(_ reads: StatusReads, appId: String) async throws -> [String: StoredStatus] {
        guard !reads.withoutCopy.isEmpty else { return reads.found }
        let keys = RedisKeys(appId: appId)
        let runner = self.runner
        let commands = try reads.withoutCopy.map { missing in
            try runner.command(StatusReadCopy.self, keys: .init(user: keys.user(missing.userId)), arguments: .init(viewer: reads.viewer))
        }
        let replies = try await runner.pipeline(commands, loading: [StatusReadCopy.self])
        var found = reads.found
        for (missing, reply) in zip(reads.withoutCopy, replies) {
            guard let fields = try ScriptRunner.decode(StatusReadCopy.self, reply).fields else { continue }
            let friend = missing.viewerIsFriend
            if let stored = try Self.decode(userId: missing.userId, fields: fields, viewerIsFriend: friend, withFreeze: reads.viewer != nil) {
                found[missing.userId] = stored
            }
        }
        return found
    }

    /// What setSelfStatus did.
    struct SetResult: Sendable {
        var write: WriteResult
        /// Whether the public view changed (SPEC §10.5).
        var publicChange: Bool
        /// The availability chosen before the call.
        var previousAvailability: Availability
        /// Whether the custom status changed.
        var customStatusChanged: Bool
    }

    /// SPEC §4 setSelfStatus; `nil` clears, `keep` leaves the custom status as it is; `availability` nil keeps it. The
    /// script publishes the change itself; the app's log of recent changes (kept `keepMs`; `nil` when no node needs
    /// it) is written in the same round trip. `graceSeconds` is the app's `offlineGraceSeconds`: becoming invisible
    /// shows as a drop (SPEC §10.5).
    func setCustomStatus(
        appId: String,
        userId: String,
        value: String?,
        keep: Bool = false,
        availability: Availability? = nil,
        expiresAt: Int64? = nil,
        graceSeconds: Int = 0,
        keepMs: Int64?
    ) async throws -> SetResult {
        let user = RedisKeys(appId: appId).user(userId)
        var graceMs = availability == .invisible ? Int64(graceSeconds) * 1000 : 0
        if expiresAt != nil || graceMs > 0 {
            // Only for a user who exists: a refused request writes nothing (SPEC §7).
            guard try await redis.send("EXISTS", user.profile).int == 1 else {
                throw StatusError(.userNotFound, "user \(userId) not found")
            }
        }
        if let expiresAt {
            // SPEC §10.2: the due-time entry first, so that an expiry stored by a node that dies right after is in the
            // index, and only if written (a failed write fails the request before anything is stored).
            try await addExpiry(appId: appId, userId: userId, expiresAt: expiresAt)
        }
        if graceMs > 0 {
            // SPEC §10.5 as §10.3: the grace index entry first, acknowledged, so that a grace the script starts is
            // always ended. Where it cannot be written the user is shown offline at once rather than never.
            do {
                try await addGrace(appId: appId, userId: userId, endsAt: clock.nowMs + graceMs)
            } catch {
                graceMs = 0
            }
        }
        let (reply, _) = try await runner.run(
            SetCustomStatus.self,
            keys: .init(user: user),
            arguments: .init(
                value: value,
                appId: appId,
                userId: userId,
                keep: keep,
                availability: availability,
                expiresAt: expiresAt,
                graceMs: graceMs
            ),
            then: keepMs.map { RecentChanges.record(appId: appId, userId: userId, nowMs: clock.nowMs, keepMs: $0) } ?? []
        )
        if let expiresAt {
            // And again once stored: the index is in the app's slot, the status in the user's, so a sweep may have taken
            // and dropped the entry between the two (it found no expiry stored yet, or an older one it cleared).
            try? await addExpiry(appId: appId, userId: userId, expiresAt: expiresAt, attempts: 3)
        }
        return SetResult(
            write: WriteResult(change: reply.change, reply: reply.status.owned(by: userId)),
            publicChange: reply.publicChange,
            previousAvailability: reply.previousAvailability,
            customStatusChanged: reply.customStatusChanged
        )
    }

    /// Adds the user to the app's expiry index at `expiresAt` unless an earlier entry is there (`ZADD LT`: the index
    /// never holds a later time than any expiry stored since, ``ExpirySweeper``), then marks the app to be swept by then
    /// (``DueIndexStore/add(_:appId:index:userId:dueAt:)``); an error reply is thrown, after `attempts` tries.
    private func addExpiry(appId: String, userId: String, expiresAt: Int64, attempts: Int = 1) async throws {
        var attempt = 1
        while true {
            do {
                try await dueIndexes.add(
                    RedisKeys.expiringApps,
                    appId: appId,
                    index: RedisKeys(appId: appId).expiries,
                    userId: userId,
                    dueAt: expiresAt
                )
                return
            } catch {
                guard attempt < attempts else { throw error }
                attempt += 1
            }
        }
    }

    /// What ``expireCustomStatus(appId:userId:)`` came to.
    enum CustomStatusExpiry: Sendable {
        /// Nothing to clear: no custom status with an expiry is stored.
        case nothing
        /// The stored moment (epoch ms) has not come on the Redis clock: the entry was taken early (by a node whose clock
        /// runs ahead, or at another write's time).
        case later(Int64)
        /// Cleared: the user's status after.
        case cleared(StatusReply)
    }

    /// SPEC §10.2: clears the user's custom status if its stored expiry has come on the Redis clock
    /// (`custom_status_expire.lua`, which publishes the change).
    func expireCustomStatus(appId: String, userId: String) async throws -> CustomStatusExpiry {
        let user = RedisKeys(appId: appId).user(userId)
        let reply = try await runner.run(CustomStatusExpire.self, keys: .init(user: user), arguments: .init(appId: appId, userId: userId))
        switch reply {
        case .nothingToClear: return .nothing
        case .later(let expiresAt): return .later(expiresAt)
        case .cleared(_, let status): return .cleared(status.owned(by: userId))
        }
    }

    /// What a connect did besides the status: the device it replaced and the devices it kicked, by the login policy
    /// or past `maxDevicesPerUser` (earliest connected first).
    struct ConnectResult: Sendable {
        var write: WriteResult
        var replaced: DeviceRecord?
        /// The device's resume point, read in the connect's step when asked for (SPEC §7).
        var resumePoint: ResumePoint?
        var kicked: [KickedDevice]
    }

    /// A device a login kicked.
    struct KickedDevice: Sendable {
        var deviceId: String
        var record: DeviceRecord
        var reason: KickReason
    }

    /// Why a login kicked a device (the `reason` of its `kicked` event, SPEC §7).
    enum KickReason: String, Sendable {
        case loginPolicy
        case tooManyDevices
    }

    /// The login rules `device_connect.lua` applies, passed as one JSON argument: the platforms whose other devices the
    /// login kicks (``LoginPolicy/platformsKicked(byLoginFrom:)``), then the device limit.
    struct LoginRules: Sendable, Encodable {
        var maxDevices: Int
        var kickPlatforms: [String]
        /// SPEC §10.6 `connectRateLimit`: accepted connects in any window (nil: not limited, for the node's own
        /// re-filing of live sessions, which is no connect of the user's).
        var connectCalls: Int?
        var connectWindowMs: Int64?

        init(maxDevices: Int, policy: LoginPolicy, platform: Platform, connectLimit: AppConfig.RateLimit? = nil) {
            self.maxDevices = maxDevices
            self.kickPlatforms = policy.platformsKicked(byLoginFrom: platform).map(\.rawValue).sorted()
            self.connectCalls = connectLimit?.calls
            self.connectWindowMs = connectLimit.map { Int64($0.windowSeconds) * 1000 }
        }
    }

    /// SPEC §10.6 `connectRateLimit`: throws `RATE_LIMITED` when a connect of the user would be refused now
    /// (`connect_admission.lua`, reads only), so that a refused connect stores nothing and reads nothing of the user
    /// (SPEC §10.7). Admitted with `readingRelations`, it answers the user's relationships, read in the same step.
    func admitConnect(appId: String, userId: String, limit: AppConfig.RateLimit, readingRelations: Bool) async throws -> Relations? {
        let user = RedisKeys(appId: appId).user(userId)
        return try await runner.run(
            ConnectAdmission.self,
            keys: .init(user: user),
            arguments: .init(limit: limit, readingRelations: readingRelations)
        ).relations
    }

    /// A device connects (`device_connect.lua`, which applies the login rules and publishes the change). With a
    /// token's `generation`, a user deleted since the token was minted is `UNAUTHORIZED` and nothing is written. With
    /// `readingResumePoint`, the device's resume point is read in the same step (SPEC §7).
    func connect(
        appId: String,
        userId: String,
        deviceId: String,
        record: DeviceRecord,
        rules: LoginRules,
        generation: String? = nil,
        readingResumePoint: Bool = false,
        alongside: DeviceConnect.Alongside? = nil
    ) async throws -> ConnectResult {
        let user = RedisKeys(appId: appId).user(userId)
        let reply = try await runner.run(
            DeviceConnect.self,
            keys: .init(user: user, deviceId: deviceId, alongside: alongside),
            arguments: .init(
                deviceId: deviceId,
                record: record,
                rules: rules,
                appId: appId,
                userId: userId,
                generation: generation,
                readingResumePoint: readingResumePoint,
                alongside: alongside
            ),
            acrossSlots: alongside != nil
        )
        let write = WriteResult(change: reply.change, reply: reply.status.owned(by: userId))
        return ConnectResult(write: write, replaced: reply.replaced, resumePoint: reply.resumePoint, kicked: reply.kicked)
    }

    /// What a device state report or a heartbeat did (`device_state.lua`).
    struct DeviceUpdate: Sendable {
        /// Whether the device is connected.
        var found: Bool
        var write: WriteResult
    }

    /// SPEC §10.4 / §7: a device reports its `state` (nil: unchanged) and, with `heartbeat`, is alive for another
    /// `heartbeatTimeoutSeconds` (a backend-driven device). The script publishes the change itself.
    func updateDevice(appId: String, userId: String, deviceId: String, state: DeviceState?, heartbeat: Bool) async throws -> DeviceUpdate {
        let user = RedisKeys(appId: appId).user(userId)
        let reply = try await runner.run(
            DeviceStateReport.self,
            keys: .init(user: user),
            arguments: .init(deviceId: deviceId, state: state, heartbeat: heartbeat, appId: appId, userId: userId)
        )
        return DeviceUpdate(found: reply.found, write: WriteResult(change: reply.change, reply: reply.status.owned(by: userId)))
    }

    /// What the end of an offline grace did (`grace_end.lua`).
    enum GraceEnd: Sendable {
        /// No grace to end: a device connected since, or none was started.
        case none
        /// The grace runs until then (epoch ms, Redis clock).
        case later(Int64)
        /// The user went offline, or (SPEC §10.5) an invisible user still seen online is seen offline;
        /// `clearedCustomStatus` as for ``RemoveResult``; `still`: when the other grace, still running, ends.
        case ended(reply: StatusReply, clearedCustomStatus: Bool, still: Int64?)
    }

    /// SPEC §10.3, §10.5: ends the user's offline grace, or the grace of their becoming invisible, if it ran out
    /// (`grace_end.lua`, which publishes the change).
    func endGrace(appId: String, userId: String, retentionSeconds: Int) async throws -> GraceEnd {
        let user = RedisKeys(appId: appId).user(userId)
        let reply = try await runner.run(
            GraceEndScript.self,
            keys: .init(user: user),
            arguments: .init(retentionMs: Int64(retentionSeconds) * 1000, appId: appId, userId: userId)
        )
        switch reply {
        case .none: return .none
        case .later(let until): return .later(until)
        case .ended(let cleared, _, let still, let status):
            return .ended(reply: status.owned(by: userId), clearedCustomStatus: cleared, still: still)
        }
    }

    /// Removes devices (all when `deviceIds` is empty). `connectionId` limits removal to that connection's record;
    /// `silentForMs` to devices whose last heartbeat is older than that on Redis's clock. `resumePoint` (with one
    /// device) is stored for the device in the same step, kept `resumeTTLms` (SPEC §7). On a single server `alongside`
    /// has the app's online index written in the same step too (``DevicesRemove/Alongside``).
    func remove(
        appId: String,
        userId: String,
        deviceIds: [String],
        leavingAs mode: StatusType,
        retentionSeconds: Int,
        connectionId: String? = nil,
        silentForMs: Int64? = nil,
        resumePoint: ResumePoint.Pending? = nil,
        resumeTTLms: Int64 = 0,
        graceSeconds: Int = 0,
        alongside: DevicesRemove.Alongside? = nil
    ) async throws -> RemoveResult {
        let user = RedisKeys(appId: appId).user(userId)
        let resumed = deviceIds.count == 1 ? resumePoint : nil
        let keys = DevicesRemove.Keys(user: user, resumeDeviceId: resumed == nil ? nil : deviceIds[0], alongside: alongside)
        var graceMs = mode == .offline ? Int64(graceSeconds) * 1000 : 0
        if graceMs > 0 {
            // SPEC §10.3: the grace index entry first, acknowledged, so that a grace the script starts is always in the
            // index (an entry for a user who kept a device is dropped by the sweep when it falls due). The index is in
            // the app's slot, the script in the user's: where the entry cannot be written, no grace starts and the drop
            // is what it is without one (the user goes offline now) rather than a grace nothing would ever end.
            do {
                try await addGrace(appId: appId, userId: userId, endsAt: clock.nowMs + graceMs)
            } catch {
                graceMs = 0
            }
        }
        let arguments = DevicesRemove.Arguments(
            mode: mode,
            retentionMs: Int64(retentionSeconds) * 1000,
            connectionId: connectionId,
            silentForMs: silentForMs,
            appId: appId,
            userId: userId,
            resumePoint: resumed,
            resumeTTLms: resumeTTLms,
            graceMs: graceMs,
            deviceIds: deviceIds,
            alongside: alongside
        )
        let reply = try await runner.run(DevicesRemove.self, keys: keys, arguments: arguments, acrossSlots: alongside != nil)
        return RemoveResult(
            change: reply.change,
            clearedCustomStatus: reply.clearedCustomStatus,
            removed: reply.removed,
            reply: reply.status.owned(by: userId)
        )
    }

    /// Adds the user to the app's grace index at `endsAt` unless an earlier entry is there (`ZADD LT`: an entry taken
    /// early is put back at the stored end, ``GraceSweeper``), then marks the app to be swept by then; an error reply is
    /// thrown.
    private func addGrace(appId: String, userId: String, endsAt: Int64) async throws {
        try await dueIndexes.add(RedisKeys.graceApps, appId: appId, index: RedisKeys(appId: appId).graces, userId: userId, dueAt: endsAt)
    }

    /// Keeps the app's online index in step with users' statuses (applied in version order, in the order given), and
    /// logs them in the app's recent changes (kept `keepMs`). Returns how many updates were applied.
    @discardableResult
    func index(appId: String, updates: [OnlineIndexWriter.Update], keepMs: Int64) async throws -> Int {
        let reply = try await runner.run(
            PresenceIndex.self,
            keys: .init(app: RedisKeys(appId: appId)),
            arguments: .init(keepMs: keepMs, rolePrefix: RedisKeys(appId: appId).onlineRolePrefix, updates: updates)
        )
        return Int(reply.value)
    }
}
