/// A text frame received by a device, as far as the loader cares, read by one pass over its UTF-8 bytes: no decoding,
/// no allocation. Only the counted fields are looked at (the top-level `event`, `ok` and `statuses`, and in each status
/// object its `userId`, `version` and `customStatus`), wherever they sit in their object, so the scan does not depend
/// on the server's key order; any other value is skipped by its brackets and quotes. A status object's `statusType` is
/// read too (the failover runs count what watchers see).
enum DeviceFrame: Equatable {
    /// `{"event":"welcome",...}`: the connection is established.
    case welcome
    /// `{"event":"onUserStatusChanged","statuses":[...]}`; its statuses went to the scan's `status` callback.
    case statusChanged
    /// A reply `{"id":...,"ok":...}`.
    case reply(ok: Bool)
    /// `{"event":"kicked",...}`.
    case kicked
    /// Anything else.
    case other

    /// One status object of an `onUserStatusChanged` frame.
    struct Status: Equatable {
        /// The user's index (`u<index>`), or -1 for an id the loader did not create.
        var user: Int = -1
        var version: Int64 = -1
        /// The `statusType`.
        var type = StatusKind.unknown
        /// The loader's change carried in the custom status (`"<sequence>:<send time, monotonic µs>"`), or nil.
        var change: Change?
    }

    /// A status object's `statusType`.
    enum StatusKind: UInt8, Equatable {
        case unknown = 0
        case online = 1
        case offline = 2
        case unlogined = 3
    }

    /// The loader's change carried in a custom status.
    struct Change: Equatable {
        var sequence: Int
        var sentMicros: UInt64
    }

    /// Classifies a text frame, calling `status` for each status object of an `onUserStatusChanged` frame, in order.
    static func scan(_ bytes: UnsafeRawBufferPointer, status: (Status) -> Void) -> DeviceFrame {
        var scanner = JSONByteScanner(bytes)
        var event = EventName.none
        var ok: Bool?
        var pendingStatuses: Int?
        guard scanner.enterObject() else { return .other }
        while let key = scanner.nextKey() {
            if scanner.equals(key, "event") {
                guard let value = scanner.readString() else { return .other }
                event = EventName(scanner, value)
            } else if scanner.equals(key, "statuses") {
                if event == .statusChanged {
                    guard scanStatuses(&scanner, status: status) else { return .other }
                } else {
                    pendingStatuses = scanner.index
                    guard scanner.skipValue() else { return .other }
                }
            } else if scanner.equals(key, "ok") {
                ok = scanner.readBool()
                guard ok != nil else { return .other }
            } else {
                guard scanner.skipValue() else { return .other }
            }
        }
        switch event {
        case .statusChanged:
            if let pendingStatuses {
                scanner.index = pendingStatuses
                guard scanStatuses(&scanner, status: status) else { return .other }
            }
            return .statusChanged
        case .welcome: return .welcome
        case .kicked: return .kicked
        case .unknown: return .other
        case .none: return ok.map { .reply(ok: $0) } ?? .other
        }
    }

    /// The `resume` token of a welcome frame (SPEC §7), or nil.
    static func resumeToken(_ bytes: UnsafeRawBufferPointer) -> String? {
        var scanner = JSONByteScanner(bytes)
        guard scanner.enterObject() else { return nil }
        while let key = scanner.nextKey() {
            if scanner.equals(key, "resume") {
                guard let value = scanner.readString() else { return nil }
                return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[value]), as: UTF8.self)
            }
            guard scanner.skipValue() else { return nil }
        }
        return nil
    }

    /// Convenience for tests and tools: classifies `text` and collects its statuses.
    static func parse(_ text: String) -> (DeviceFrame, [Status]) {
        var copy = text
        var statuses: [Status] = []
        let frame = copy.withUTF8 { scan(UnsafeRawBufferPointer($0)) { statuses.append($0) } }
        return (frame, statuses)
    }

    private enum EventName {
        case none
        case statusChanged
        case welcome
        case kicked
        case unknown

        init(_ scanner: JSONByteScanner, _ value: Range<Int>) {
            if scanner.equals(value, "onUserStatusChanged") {
                self = .statusChanged
            } else if scanner.equals(value, "welcome") {
                self = .welcome
            } else if scanner.equals(value, "kicked") {
                self = .kicked
            } else {
                self = .unknown
            }
        }
    }

    /// Reads the `statuses` array at the scanner's position, one callback per object.
    private static func scanStatuses(_ scanner: inout JSONByteScanner, status: (Status) -> Void) -> Bool {
        guard scanner.enterArray() else { return scanner.skipValue() }
        while scanner.nextElement() {
            guard scanner.enterObject() else {
                guard scanner.skipValue() else { return false }
                continue
            }
            var item = Status()
            while let key = scanner.nextKey() {
                if scanner.equals(key, "userId") {
                    guard let value = scanner.readString() else { return false }
                    item.user = scanner.userIndex(value)
                } else if scanner.equals(key, "statusType") {
                    guard let value = scanner.readString() else { return false }
                    if scanner.equals(value, "online") {
                        item.type = .online
                    } else if scanner.equals(value, "offline") {
                        item.type = .offline
                    } else if scanner.equals(value, "unlogined") {
                        item.type = .unlogined
                    }
                } else if scanner.equals(key, "version") {
                    guard let value = scanner.readInteger() else { return false }
                    item.version = value
                } else if scanner.equals(key, "customStatus"), scanner.peekIsString {
                    guard let value = scanner.readString() else { return false }
                    item.change = scanner.change(value)
                } else {
                    guard scanner.skipValue() else { return false }
                }
            }
            status(item)
        }
        return true
    }
}
