/// Applies a partial config (a JSON object) to an ``AppConfig``, all or nothing.
///
/// Every key must be a known flag with a value of the right type and range; otherwise the whole patch is rejected with
/// `INVALID_REQUEST` and nothing changes.
public enum AppConfigPatch {
    /// Returns `config` with the fields of `patch` applied.
    public static func apply(_ patch: JSONValue, to config: AppConfig) throws(StatusError) -> AppConfig {
        guard case .object(let fields) = patch else { throw invalid("config must be a JSON object") }
        var result = config
        for (key, value) in fields {
            switch key {
            case "plan":
                guard case .string(let raw) = value, let plan = AppConfig.Plan(rawValue: raw) else {
                    throw invalid("plan must be \"basic\" or \"premium\"")
                }
                result.plan = plan
            case "statusQuery": result.statusQuery = try bool(value, key)
            case "friendStatusNotify": result.friendStatusNotify = try bool(value, key)
            case "multiDeviceSync": result.multiDeviceSync = try bool(value, key)
            case "customStatusMaxBytes": result.customStatusMaxBytes = try int(value, key, min: 0)
            case "subscriptionLimit": result.subscriptionLimit = try int(value, key, min: 0)
            case "subscribeBatchLimit": result.subscribeBatchLimit = try int(value, key, min: 1)
            case "queryBatchLimit": result.queryBatchLimit = try int(value, key, min: 1)
            case "heartbeatTimeoutSeconds": result.heartbeatTimeoutSeconds = try int(value, key, min: 5)
            case "subscriptionRetentionSeconds": result.subscriptionRetentionSeconds = try int(value, key, min: 1)
            case "rateLimit": result.rateLimit = try rateLimit(value, key, current: result.rateLimit)
            case "connectRateLimit": result.connectRateLimit = try rateLimit(value, key, current: result.connectRateLimit)
            case "webhook": result.webhook = try webhook(value)
            case "maxDevicesPerUser": result.maxDevicesPerUser = try int(value, key, min: 1, max: 100)
            case "offlineGraceSeconds": result.offlineGraceSeconds = try int(value, key, min: 0, max: 300)
            case "loginPolicy": result.loginPolicy = try choice(value, key)
            case "lastSeenPrivacy": result.lastSeenPrivacy = try choice(value, key)
            case "allowedOrigins": result.allowedOrigins = try allowedOrigins(value)
            default: throw invalid("unknown config field \"\(key)\"")
            }
        }
        return result
    }

    private static func invalid(_ message: String) -> StatusError {
        StatusError(.invalidRequest, message)
    }

    private static func bool(_ value: JSONValue, _ key: String) throws(StatusError) -> Bool {
        guard case .bool(let flag) = value else { throw invalid("\(key) must be a boolean") }
        return flag
    }

    /// One of the string values of `Choice`.
    private static func choice<Choice: RawRepresentable & CaseIterable>(_ value: JSONValue, _ key: String) throws(StatusError) -> Choice
    where Choice.RawValue == String {
        guard case .string(let raw) = value, let choice = Choice(rawValue: raw) else {
            throw invalid("\(key) must be one of " + Choice.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))
        }
        return choice
    }

    private static func int(_ value: JSONValue, _ key: String, min: Int, max: Int = Int(Int32.max)) throws(StatusError) -> Int {
        // JSON has one number type: `5.0` is the integer 5 (as JSON Schema's `integer` says), `5.5` is not an integer.
        let integral: Int64? =
            switch value {
            case .int(let number): number
            case .double(let number) where number.rounded() == number && abs(number) < 1e15: Int64(number)
            default: nil
            }
        guard let number = integral, number >= min, number <= Int64(max) else {
            throw invalid(max == Int(Int32.max) ? "\(key) must be an integer of at least \(min)" : "\(key) must be an integer from \(min) to \(max)")
        }
        return Int(number)
    }

    private static func rateLimit(_ value: JSONValue, _ name: String, current: AppConfig.RateLimit) throws(StatusError) -> AppConfig.RateLimit {
        guard case .object(let fields) = value else { throw invalid("\(name) must be an object") }
        var result = current
        for (key, field) in fields {
            switch key {
            case "calls": result.calls = try int(field, "\(name).calls", min: 1)
            case "windowSeconds": result.windowSeconds = try int(field, "\(name).windowSeconds", min: 1)
            default: throw invalid("unknown \(name) field \"\(key)\"")
            }
        }
        return result
    }

    private static func webhook(_ value: JSONValue) throws(StatusError) -> AppConfig.Webhook? {
        switch value {
        case .null:
            return nil
        case .object(let fields):
            guard fields.keys.allSatisfy({ $0 == "url" || $0 == "secret" }),
                case .string(let url) = fields["url"], url.hasPrefix("http://") || url.hasPrefix("https://"),
                case .string(let secret) = fields["secret"], !secret.isEmpty
            else {
                throw invalid("webhook must be null or {\"url\": \"http(s)://...\", \"secret\": \"...\"}")
            }
            return AppConfig.Webhook(url: url, secret: secret)
        default:
            throw invalid("webhook must be null or an object")
        }
    }

    /// `null` (any origin) or a list of `http(s)://host[:port]` origins, stored normalized and without duplicates.
    private static func allowedOrigins(_ value: JSONValue) throws(StatusError) -> [String]? {
        let message = "allowedOrigins must be null or a list of at most \(AllowedOrigins.maxCount) origins like \"https://example.com\""
        switch value {
        case .null:
            return nil
        case .array(let items):
            guard items.count <= AllowedOrigins.maxCount else { throw invalid(message) }
            var origins: [String] = []
            for item in items {
                guard case .string(let raw) = item, let origin = AllowedOrigins.normalized(raw) else { throw invalid(message) }
                if !origins.contains(origin) { origins.append(origin) }
            }
            return origins
        default:
            throw invalid(message)
        }
    }
}
