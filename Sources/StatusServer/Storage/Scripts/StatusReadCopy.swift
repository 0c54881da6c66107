import RedisClient
import StatusCore

/// The twin of `Scripts/status_read_copy.lua` (SPEC §4 getUserStatus): writes the read copy of a status hash that has
/// none yet, then answers the same `HMGET` a status read makes.
enum StatusReadCopy: StatusScript {
    static func script(in library: ScriptLibrary) -> RedisScript { library.statusReadCopy }

    typealias Keys = UserStatusKeys

    /// ARGV: the fields to return, ``StatusRepository/readFields``, then the freeze for `viewer` when the read is
    /// made for one.
    struct Arguments: ScriptInput {
        var viewer: String? = nil
        var strings: [String] { StatusRepository.readFields + (viewer.map { [StatusRepository.freezeField(for: $0)] } ?? []) }
    }

    /// The values of `HMGET status readFields...`, read as a status read is (``StatusRepository/decode(userId:fields:viewerIsFriend:)``),
    /// or nil when the user does not exist.
    struct Reply: ScriptReply {
        /// Nil when the user does not exist.
        var fields: RedisValue?

        init(_ value: RedisValue) throws {
            if value.isNull {
                fields = nil
                return
            }
            let count = StatusRepository.readFields.count
            guard let values = value.array, values.count == count || values.count == count + 1 else {
                throw StatusReplyError(
                    script: "status_read_copy.lua",
                    problem: "expected nil or \(StatusRepository.readFields.count) values, got \(value.kind)"
                )
            }
            fields = value
        }
    }
}

/// A status read: one `HMGET` of the status hash's read copy, as plain reads send it and as `status_read_copy.lua`
/// answers it, decoded here once beside the script that writes the copy.
extension StatusRepository {
    /// The fields of a user's status hash that a status read needs: its own (`t`, `cs`, `la`, `v`, `vt`), the read copy
    /// of the profile and the devices (`pc`, `pr`, `pp`, `dp`; `lib.lua` `status_reply`), and what the views are made
    /// of (SPEC §10.5: `av`, `pv`, `ht`, `hl`, `ce`, `pt`, `ai`; `lib.lua`).
    static let readFields = ["t", "cs", "la", "v", "vt", "pc", "pr", "pp", "dp", "av", "pv", "ht", "hl", "ce", "pt", "ai"]

    /// Decodes one `HMGET` of ``readFields``; nil when the hash has no read copy (`pc`).
    /// With `withFreeze`, the reply has one more value, the user's freeze for the viewer (``statusReads(appId:userIds:viewer:)``).
    static func decode(userId: String, fields reply: RedisValue, viewerIsFriend: Bool?, withFreeze: Bool = false) throws -> StoredStatus? {
        if reply.isNull { return nil }
        guard let fields = reply.array, fields.count == readFields.count + (withFreeze ? 1 : 0) else { throw StatusReplyError.malformed }
        guard !fields[5].isNull else { return nil }
        func text(_ index: Int) -> String? { fields[index].string.flatMap { $0.isEmpty ? nil : $0 } }
        let record = StatusFields(
            type: fields[0].string.flatMap(StatusType.init(rawValue:)) ?? .unlogined,
            custom: text(1),
            lastActive: fields[2].int,
            version: fields[3].int ?? 0,
            privacy: text(7),
            availability: text(9),
            publicVersion: fields[10].int,
            hiddenType: text(11),
            hiddenLastActive: fields[12].int,
            expiresAt: fields[13].int,
            autoAway: fields[15].string == "1"
        ).record(userId: userId, devices: fields[8].bytes.map(onlineDevices) ?? [])
        return StoredStatus(
            record: record,
            role: text(6),
            versionTime: fields[4].int,
            publicVersionTime: fields[14].int,
            viewerIsFriend: viewerIsFriend,
            frozenForViewer: withFreeze ? fields[readFields.count].int : nil
        )
    }

    /// The devices of a read copy's `dp` (`deviceId platform[:state] ...`, `lib.lua` `device_word`), by deviceId; a
    /// pair with an unknown platform or state is skipped, as in ``StatusReply``.
    static func onlineDevices(_ words: [UInt8]) -> [OnlineDevice] {
        guard !words.isEmpty else { return [] }
        let parts = words.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        var devices: [OnlineDevice] = []
        devices.reserveCapacity(parts.count / 2)
        var index = 0
        while index + 1 < parts.count {
            let id = String(decoding: parts[index], as: UTF8.self)
            if let device = StatusFields.device(id, word: String(decoding: parts[index + 1], as: UTF8.self)) {
                devices.append(device)
            }
            index += 2
        }
        devices.sort { $0.deviceId < $1.deviceId }
        return devices
    }
}
