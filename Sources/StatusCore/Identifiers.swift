/// Validation of the identifiers of SPEC §1.
public enum Identifiers {
    /// `appId`: 1–64 chars of `A-Z a-z 0-9 _ -`.
    public static func isValidAppId(_ value: String) -> Bool {
        isValid(value, maxLength: 64, allowDotAt: false)
    }

    /// `userId`: 1–128 bytes of `A-Z a-z 0-9 _ - . @`.
    public static func isValidUserId(_ value: String) -> Bool {
        isValid(value, maxLength: 128, allowDotAt: true)
    }

    /// `deviceId`: 1–64 chars of `A-Z a-z 0-9 _ -`.
    public static func isValidDeviceId(_ value: String) -> Bool {
        isValid(value, maxLength: 64, allowDotAt: false)
    }

    /// Throws `INVALID_USER_ID` unless `value` is a valid appId.
    public static func appId(_ value: String) throws(StatusError) -> String {
        guard isValidAppId(value) else { throw StatusError(.invalidUserId, "invalid appId") }
        return value
    }

    /// Throws `INVALID_USER_ID` unless `value` is a valid userId.
    public static func userId(_ value: String) throws(StatusError) -> String {
        guard isValidUserId(value) else { throw StatusError(.invalidUserId, "invalid userId") }
        return value
    }

    /// Throws `INVALID_USER_ID` unless `value` is a valid deviceId.
    public static func deviceId(_ value: String) throws(StatusError) -> String {
        guard isValidDeviceId(value) else { throw StatusError(.invalidUserId, "invalid deviceId") }
        return value
    }

    /// Validates every id of a `userIds` list (one bad id fails the whole list) and folds duplicates, keeping first-seen order.
    public static func userIdList(_ values: [String]) throws(StatusError) -> [String] {
        var seen = Set<String>()
        var result: [String] = []
        result.reserveCapacity(values.count)
        for value in values {
            guard isValidUserId(value) else { throw StatusError(.invalidUserId, "invalid userId in userIds") }
            if seen.insert(value).inserted { result.append(value) }
        }
        return result
    }

    private static func isValid(_ value: String, maxLength: Int, allowDotAt: Bool) -> Bool {
        let bytes = value.utf8
        guard !bytes.isEmpty, bytes.count <= maxLength else { return false }
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "_"), UInt8(ascii: "-"):
                continue
            case UInt8(ascii: "."), UInt8(ascii: "@"):
                if allowDotAt { continue }
                return false
            default:
                return false
            }
        }
        return true
    }
}
