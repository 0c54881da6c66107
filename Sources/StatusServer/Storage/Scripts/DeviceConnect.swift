import RedisClient

/// The twin of `Scripts/device_connect.lua` (SPEC §2 / §7 a device connects; §3 login policy and device limit;
/// §10.6 connect rate limit): stores the device, kicks what the rules say, and publishes the change.
enum DeviceConnect: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.deviceConnect }

    /// What a connect also writes on a single server, in its own step: the node's device list (SPEC §9) and the app's
    /// online index (SPEC §4). A cluster keeps them in other hash slots than the user's, written in steps of their own
    /// (``NodeRegistry``, ``OnlineIndexWriter``).
    struct Alongside: Sendable {
        /// The node's device list and the session's member of it (``NodeStore/member(_:_:_:_:)``).
        var nodeDevices: String
        var member: String
        /// The app whose online index is updated, and how long its recent changes keep an entry.
        var app: RedisKeys
        var keepMs: Int64
    }

    /// KEYS: status, profile, devices, subs, connect rate-limit log, the device's resume point, then with ``Alongside``
    /// the node's device list, online index, applied versions, recent changes, listed roles.
    struct Keys: ScriptInput {
        var user: UserKeys
        var deviceId: String
        var alongside: Alongside? = nil
        var strings: [String] {
            var keys = [user.status, user.profile, user.devices, user.subscriptions, user.connectRateLimit, user.resume(deviceId)]
            if let alongside {
                let app = alongside.app
                keys += [alongside.nodeDevices, app.online, app.onlineVersions, app.recentChanges, app.onlineRoles]
            }
            return keys
        }
    }

    /// ARGV: deviceId, device JSON, login rules JSON, appId, userId, the two status channels, token generation ('' =
    /// no token to check), whether to read the resume point, then with ``Alongside`` the node's device list member,
    /// the recent changes' keep ms and the role indexes' prefix.
    struct Arguments: ScriptInput {
        var deviceId: String
        var record: DeviceRecord
        var rules: StatusRepository.LoginRules
        var appId: String
        var userId: String
        var generation: String?
        var readingResumePoint = false
        var alongside: Alongside? = nil

        var strings: [String] {
            get throws {
                var strings =
                    [deviceId, String(decoding: record.jsonBytes, as: UTF8.self), String(decoding: rules.jsonBytes, as: UTF8.self), appId, userId]
                    + BusChannels.statusArguments(appId, userId) + [generation ?? "", readingResumePoint ? "1" : "0"]
                if let alongside { strings += [alongside.member, String(alongside.keepMs), alongside.app.onlineRolePrefix] }
                return strings
            }
        }
    }

    /// `{changed (1 status | 2 devices only), replaced device JSON | '', resume point | '', kicked count k, k x
    /// (deviceId, device JSON, reason), <status reply>}`; `USER_NOT_FOUND`, `TOKEN_REVOKED` and
    /// `CONNECT_RATE_LIMITED <ms>` are error replies.
    struct Reply: ScriptReply {
        var change: StatusRepository.Change
        var replaced: DeviceRecord?
        /// The device's stored resume point, when asked for and there is one that parses (``ResumePoint/init(stored:)``).
        var resumePoint: ResumePoint?
        /// The kicked devices whose record and reason this version reads (others are left out).
        var kicked: [StatusRepository.KickedDevice]
        var status: StatusReply

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "device_connect.lua")
            change = try reader.change()
            replaced = DeviceRecord.decode(try reader.value())
            resumePoint = try reader.optionalString().flatMap(ResumePoint.init(stored:))
            let count = try reader.count()
            kicked = []
            kicked.reserveCapacity(count)
            for _ in 0..<count {
                let id = try reader.string()
                let record = DeviceRecord.decode(try reader.value())
                let reason = try reader.string()
                if let record, let reason = StatusRepository.KickReason(rawValue: reason) {
                    kicked.append(StatusRepository.KickedDevice(deviceId: id, record: record, reason: reason))
                }
            }
            status = try reader.statusReply()
        }
    }
}
