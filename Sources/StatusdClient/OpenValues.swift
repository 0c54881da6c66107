/// A string of one of the document's closed sets (a platform, an availability, an error code…) that still decodes when
/// a newer server sends a value this client does not know.
///
/// swift-openapi-generator turns such a schema into a frozen `enum`, and one unknown value then fails the decoding of
/// the whole answer: a status listing a device of a platform added later would make every status query throw. The
/// generator has no option for open enums, so these hand-written types stand in for the generated ones
/// (`typeOverrides` in openapi-generator-config.yaml): any string is kept, the known values are constants, and
/// ``isKnown`` tells them apart. They encode and decode as the bare string (the standard library's `RawRepresentable`
/// coding, whose failable initializer never fails here).
public protocol OpenStringValue: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible,
    ExpressibleByStringLiteral
where RawValue == String {
    init(rawValue: String)
    /// The values of the document this client was generated from.
    static var known: [Self] { get }
}

extension OpenStringValue {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }
    /// Whether the value is one of the document's (false for one a newer server added).
    public var isKnown: Bool { Self.known.contains(self) }
}

/// A device's platform (SPEC §1).
public struct Platform: OpenStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let ios: Self = "ios"
    public static let android: Self = "android"
    public static let ipad: Self = "ipad"
    public static let web: Self = "web"
    public static let windows: Self = "windows"
    public static let macos: Self = "macos"
    public static let linux: Self = "linux"
    public static let other: Self = "other"
    public static let known: [Self] = [.ios, .android, .ipad, .web, .windows, .macos, .linux, .other]
}

/// A user's presence (SPEC §2).
public struct StatusType: OpenStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let online: Self = "online"
    public static let offline: Self = "offline"
    public static let unlogined: Self = "unlogined"
    public static let known: [Self] = [.online, .offline, .unlogined]
}

/// What a user chose to show (SPEC §10.1).
public struct Availability: OpenStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let available: Self = "available"
    public static let away: Self = "away"
    public static let busy: Self = "busy"
    public static let dnd: Self = "dnd"
    public static let invisible: Self = "invisible"
    public static let known: [Self] = [.available, .away, .busy, .dnd, .invisible]
}

/// What a device reports of its user's attention (SPEC §10.4).
public struct DeviceState: OpenStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let active: Self = "active"
    public static let idle: Self = "idle"
    public static let background: Self = "background"
    public static let known: [Self] = [.active, .idle, .background]
}

/// Who may see a user's `lastActiveAt` (SPEC §2, last-seen privacy).
public struct LastSeenPrivacy: OpenStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let everyone: Self = "everyone"
    public static let friends: Self = "friends"
    public static let nobody: Self = "nobody"
    public static let known: [Self] = [.everyone, .friends, .nobody]
}

/// An app's plan (SPEC §3).
public struct Plan: OpenStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let basic: Self = "basic"
    public static let premium: Self = "premium"
    public static let known: [Self] = [.basic, .premium]
}

/// Which of a user's other devices a login kicks (SPEC §3).
public struct LoginPolicy: OpenStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let multi: Self = "multi"
    public static let singlePerPlatform: Self = "singlePerPlatform"
    public static let single: Self = "single"
    public static let known: [Self] = [.multi, .singlePerPlatform, .single]
}

extension StatusdError.Code: OpenStringValue {
    /// The codes of the document (the client's own, `TIMEOUT`, `DISCONNECTED` and `UNEXPECTED_RESPONSE`, are not).
    public static let known: [Self] = [
        .invalidRequest, .invalidUserId, .customStatusTooLong, .tooManyUsers, .invalidLimit, .unauthorized, .forbidden,
        .planNotSupported, .featureDisabled, .userNotFound, .appNotFound, .appExists, .requestTimeout, .payloadTooLarge,
        .rateLimited, .unavailable, .cannotSubscribeSelf, .notFound, .methodNotAllowed, .internalError,
    ]
}

/// An app's webhook (SPEC §8) in its config, or none. In ``AppConfigPatch`` a nil `webhook` leaves the webhook as it
/// is, and ``off`` removes it: the patch then carries an explicit JSON `null`, which the generated type, writing only
/// the members it has, could not send.
public enum Webhook: Codable, Hashable, Sendable {
    case on(url: String, secret: String)
    case off

    private enum CodingKeys: String, CodingKey {
        case url, secret
    }

    public init(from decoder: any Decoder) throws {
        if try decoder.singleValueContainer().decodeNil() {
            self = .off
            return
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self = .on(url: try container.decode(String.self, forKey: .url), secret: try container.decode(String.self, forKey: .secret))
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .on(let url, let secret):
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(url, forKey: .url)
            try container.encode(secret, forKey: .secret)
        case .off:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        }
    }
}

/// The browser origins allowed to open device WebSockets (SPEC §3), or any. In ``AppConfigPatch`` a nil
/// `allowedOrigins` leaves the list as it is, and ``anyOrigin`` removes it (an explicit JSON `null`).
public enum AllowedOrigins: Codable, Hashable, Sendable {
    case anyOrigin
    case only([String])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self = container.decodeNil() ? .anyOrigin : .only(try container.decode([String].self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .anyOrigin: try container.encodeNil()
        case .only(let origins): try container.encode(origins)
        }
    }
}
