import StatusCore

/// `status` messages read without Foundation's `JSONDecoder`.
///
/// Every change a node delivers arrives as one such message, and `JSONDecoder` was about 2 % of the node's CPU on
/// workload W (docs/benchmarks.md). This reader takes the fields of `docs/bus.md` in any order, as the Lua scripts write
/// them, with ``JSONFastScanner``: plain strings (no escapes), integers, booleans and null. Anything else (an escape
/// in a custom status, a member it does not know, a value of another type, a key given twice, another `type` or `v`)
/// answers nil, and ``FanoutService`` decodes the message with `JSONDecoder` instead, so a message means the same
/// either way (`BusMessageFastDecodeTests` compares the two over generated and mutated messages).
extension BusMessage {
    /// The change a plain `status` message carries, or nil.
    static func fastStatusChange(_ bytes: UnsafeRawBufferPointer) -> StatusChange? {
        var scanner = JSONFastScanner(bytes)
        var seen = JSONMemberSet()
        var version: Int64?
        var appId: String?
        var change: StatusRepository.Change?
        var role: String?
        var lastSeenPrivacy: LastSeenPrivacy?
        var status: UserStatus?
        var publicVersion: Int64?
        var publicChange = true
        var hidden: PresenceRecord.Hidden?
        var autoAway = false
        let read = scanner.members { scanner, key in
            guard let field = Field(rawValue: key), seen.first(field.ordinal) else { return false }
            switch field {
            case .version:
                version = scanner.integer()
                return version == Int64(Self.version)
            case .type:
                return scanner.plainString() == Kind.status.rawValue
            case .appId:
                return scanner.required(into: &appId) { $0.plainString() }
            case .change:
                return scanner.required(into: &change) { $0.plainString().flatMap(StatusRepository.Change.init(wireName:)) }
            case .role:
                return scanner.optional(into: &role) { $0.plainString() }
            case .lastSeenPrivacy:
                // A value this version does not know is taken as none, as `JSONDecoder` reads it.
                guard let name = scanner.optional({ $0.plainString() }) else { return false }
                lastSeenPrivacy = name.flatMap(LastSeenPrivacy.init(rawValue:))
                return true
            case .status:
                return scanner.required(into: &status) { Self.fastStatus(&$0) }
            case .publicVersion:
                return scanner.optional(into: &publicVersion) { $0.integer() }
            case .publicChange:
                guard let value = scanner.optional({ $0.bool() }) else { return false }
                publicChange = value ?? true
                return true
            case .hidden:
                return scanner.optional(into: &hidden) { Self.fastHidden(&$0) }
            case .autoAway:
                guard let value = scanner.optional({ $0.bool() }) else { return false }
                autoAway = value ?? false
                return true
            case .userId, .userIds, .devices, .reason, .since, .viewer:
                return false
            }
        }
        guard read, scanner.atEnd(), seen.contains(Field.type.ordinal), version != nil, let appId, let change, let status else { return nil }
        return StatusChange(
            appId: appId,
            change: change.rawValue,
            role: role,
            lastSeenPrivacy: lastSeenPrivacy,
            status: status,
            publicVersion: publicVersion,
            publicChange: publicChange,
            hidden: hidden,
            autoAway: autoAway
        )
    }

    /// The status object of SPEC §2 (its keys as `UserStatus` encodes them).
    private static func fastStatus(_ scanner: inout JSONFastScanner) -> UserStatus? {
        var seen = JSONMemberSet()
        var userId: String?
        var statusType: StatusType?
        var customStatus: String?
        var lastActiveAt: Int64?
        var version: Int64?
        var onlineDevices: [OnlineDevice]?
        var availability: Availability?
        var customStatusExpiresAt: Int64?
        let read = scanner.members { scanner, key in
            switch key {
            case "userId":
                return seen.first(0) && scanner.required(into: &userId) { $0.plainString() }
            case "statusType":
                return seen.first(1) && scanner.required(into: &statusType) { $0.plainString().flatMap(StatusType.init(rawValue:)) }
            case "customStatus":
                return seen.first(2) && scanner.optional(into: &customStatus) { $0.plainString() }
            case "lastActiveAt":
                return seen.first(3) && scanner.optional(into: &lastActiveAt) { $0.integer() }
            case "version":
                return seen.first(4) && scanner.required(into: &version) { $0.integer() }
            case "onlineDevices":
                return seen.first(5) && scanner.optional(into: &onlineDevices) { Self.fastDevices(&$0) }
            case "availability":
                return seen.first(6) && scanner.optional(into: &availability) { $0.plainString().flatMap(Availability.init(rawValue:)) }
            case "customStatusExpiresAt":
                return seen.first(7) && scanner.optional(into: &customStatusExpiresAt) { $0.integer() }
            default:
                return false
            }
        }
        guard read, let userId, let statusType, let version else { return nil }
        return UserStatus(
            userId: userId,
            statusType: statusType,
            customStatus: customStatus,
            lastActiveAt: lastActiveAt,
            version: version,
            onlineDevices: onlineDevices,
            availability: availability,
            customStatusExpiresAt: customStatusExpiresAt
        )
    }

    /// `[{"deviceId", "platform", "state"?}, ...]`.
    private static func fastDevices(_ scanner: inout JSONFastScanner) -> [OnlineDevice]? {
        guard scanner.expect(UInt8(ascii: "[")) else { return nil }
        var devices: [OnlineDevice] = []
        if scanner.expect(UInt8(ascii: "]")) { return devices }
        repeat {
            var seen = JSONMemberSet()
            var deviceId: String?
            var platform: Platform?
            var state: DeviceState = .active
            let read = scanner.members { scanner, key in
                switch key {
                case "deviceId":
                    return seen.first(0) && scanner.required(into: &deviceId) { $0.plainString() }
                case "platform":
                    return seen.first(1) && scanner.required(into: &platform) { $0.plainString().flatMap(Platform.init(rawValue:)) }
                case "state":
                    guard seen.first(2), let value = scanner.optional({ $0.plainString().flatMap(DeviceState.init(rawValue:)) }) else { return false }
                    state = value ?? .active
                    return true
                default:
                    return false
                }
            }
            guard read, let deviceId, let platform else { return nil }
            devices.append(OnlineDevice(deviceId: deviceId, platform: platform, state: state))
        } while scanner.expect(UInt8(ascii: ","))
        return scanner.expect(UInt8(ascii: "]")) ? devices : nil
    }

    /// `{"statusType", "lastActiveAt"?, "customStatus"?, "availability"?, "customStatusExpiresAt"?}`: what the public
    /// sees of an invisible user.
    private static func fastHidden(_ scanner: inout JSONFastScanner) -> PresenceRecord.Hidden? {
        var seen = JSONMemberSet()
        var statusType: StatusType?
        var lastActiveAt: Int64?
        var customStatus: String?
        var availability: Availability?
        var customStatusExpiresAt: Int64?
        let read = scanner.members { scanner, key in
            switch key {
            case "statusType":
                return seen.first(0) && scanner.required(into: &statusType) { $0.plainString().flatMap(StatusType.init(rawValue:)) }
            case "lastActiveAt":
                return seen.first(1) && scanner.optional(into: &lastActiveAt) { $0.integer() }
            case "customStatus":
                return seen.first(2) && scanner.optional(into: &customStatus) { $0.plainString() }
            case "availability":
                return seen.first(3) && scanner.optional(into: &availability) { $0.plainString().flatMap(Availability.init(rawValue:)) }
            case "customStatusExpiresAt":
                return seen.first(4) && scanner.optional(into: &customStatusExpiresAt) { $0.integer() }
            default:
                return false
            }
        }
        guard read, let statusType else { return nil }
        return PresenceRecord.Hidden(
            statusType: statusType,
            lastActiveAt: lastActiveAt,
            customStatus: customStatus,
            availability: availability,
            customStatusExpiresAt: customStatusExpiresAt
        )
    }
}

extension JSONFastScanner {
    /// Reads an object, handing each member's key to `member`, which reads its value and answers whether it could.
    /// False when the object or a member could not be read.
    mutating func members(_ member: (inout JSONFastScanner, String) -> Bool) -> Bool {
        guard expect(UInt8(ascii: "{")) else { return false }
        if expect(UInt8(ascii: "}")) { return true }
        repeat {
            guard let key = plainString(), expect(UInt8(ascii: ":")), member(&self, key) else { return false }
        } while expect(UInt8(ascii: ","))
        return expect(UInt8(ascii: "}"))
    }

    /// Reads a value with `value` into `target`: false when it could not.
    mutating func required<Value>(into target: inout Value?, _ value: (inout JSONFastScanner) -> Value?) -> Bool {
        target = value(&self)
        return target != nil
    }

    /// Reads `null` (leaving `target` nil) or a value with `value` into `target`: false when neither could be read.
    mutating func optional<Value>(into target: inout Value?, _ value: (inout JSONFastScanner) -> Value?) -> Bool {
        guard let read = optional(value) else { return false }
        target = read
        return true
    }

    /// Reads `null` (`.some(nil)`) or a value with `value` (`.some(value)`); nil when neither could be read.
    mutating func optional<Value>(_ value: (inout JSONFastScanner) -> Value?) -> Value?? {
        if null() { return .some(nil) }
        guard let read = value(&self) else { return nil }
        return .some(read)
    }
}
