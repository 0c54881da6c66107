import RedisClient
import StatusCore

/// The twin of `Scripts/devices_remove.lua` (SPEC §2 devices go away, §10.3 offline grace, §7 resume point): removes
/// devices, moves the user out of `online` with the last one, and publishes the change.
enum DevicesRemove: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.devicesRemove }

    /// What a departure also writes on a single server, in its own step: the app's online index when the user leaves
    /// `online` (SPEC §4). A cluster keeps it in another hash slot than the user's, written in a step of its own
    /// (``OnlineIndexWriter``).
    struct Alongside: Sendable {
        /// The app whose online index is updated, and how long its recent changes keep an entry.
        var app: RedisKeys
        var keepMs: Int64
    }

    /// KEYS: status, profile, devices, subs, the device's resume point key when one is stored, then with ``Alongside``
    /// the online index, applied versions, recent changes, listed roles (the script finds them as the last four).
    struct Keys: ScriptInput {
        var user: UserKeys
        /// The device whose resume point is written (only with one device removed).
        var resumeDeviceId: String?
        var alongside: Alongside? = nil

        var strings: [String] {
            var keys = [user.status, user.profile, user.devices, user.subscriptions]
            if let resumeDeviceId { keys.append(user.resume(resumeDeviceId)) }
            if let app = alongside?.app { keys += [app.online, app.onlineVersions, app.recentChanges, app.onlineRoles] }
            return keys
        }
    }

    /// ARGV: mode, retention ms, connection id, silent-for ms, appId, userId, the two status channels, resume point
    /// without its moment, its TTL ms, grace ms, how long before the script runs the point's moment is, then with
    /// ``Alongside`` the recent changes' keep ms and the role indexes' prefix, then the deviceIds (none: every device).
    struct Arguments: ScriptInput {
        var mode: StatusType
        var retentionMs: Int64
        /// Nil: any connection.
        var connectionId: String?
        /// Only devices whose last heartbeat is older than this many ms before now on Redis's clock. Nil: no check.
        var silentForMs: Int64?
        var appId: String
        var userId: String
        /// The resume point to store (nil: none; its moment is taken on Redis's clock by the script) and how long it is
        /// kept.
        var resumePoint: ResumePoint.Pending?
        var resumeTTLms: Int64
        /// 0: no grace.
        var graceMs: Int64
        var deviceIds: [String]
        var alongside: Alongside? = nil

        var strings: [String] {
            [mode.rawValue, String(retentionMs), connectionId ?? "", silentForMs.map(String.init) ?? "", appId, userId]
                + BusChannels.statusArguments(appId, userId)
                + [resumePoint?.scriptArgument ?? "", resumePoint == nil ? "0" : String(resumeTTLms), String(graceMs)]
                + [String(resumePoint?.lostAgoMs ?? 0)]
                + (alongside.map { [String($0.keepMs), $0.app.onlineRolePrefix] } ?? []) + deviceIds
        }
    }

    /// `{changed (0 | 1 status | 2 devices only), custom status cleared (0|1), removed count n, n x (deviceId, device
    /// JSON), <status reply>}`.
    struct Reply: ScriptReply {
        var change: StatusRepository.Change
        var clearedCustomStatus: Bool
        /// The removed devices whose record this version reads (others are left out).
        var removed: [(deviceId: String, record: DeviceRecord)]
        var status: StatusReply

        init(_ value: RedisValue) throws {
            var reader = try ScriptReplyReader(value, script: "devices_remove.lua")
            change = try reader.change()
            clearedCustomStatus = try reader.flag()
            let count = try reader.count()
            removed = []
            removed.reserveCapacity(count)
            for _ in 0..<count {
                let id = try reader.string()
                if let record = DeviceRecord.decode(try reader.value()) { removed.append((id, record)) }
            }
            status = try reader.statusReply()
        }
    }
}
