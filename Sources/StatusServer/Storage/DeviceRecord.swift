import Foundation
import RedisClient
import StatusCore

/// What is stored for a connected device in the user's `devices` hash.
struct DeviceRecord: Sendable, Hashable, Codable {
    /// Where the device is connected.
    enum Kind: String, Sendable, Codable {
        /// A WebSocket held by a statusd node.
        case webSocket = "ws"
        /// A connection kept by the app's backend, alive through heartbeats.
        case backend = "api"
    }

    /// The platform's raw value.
    var platform: String
    /// The node holding the WebSocket (empty for backend devices).
    var node: String
    /// The connection's unique id, so a late disconnect never removes a newer connection of the same deviceId.
    var connection: String
    var kind: Kind
    /// Last heartbeat, epoch ms (set by the scripts).
    var heartbeat: Int64?
    /// When the device connected, epoch ms (set by the connect script; the earliest is kicked first past
    /// `maxDevicesPerUser`).
    var connectedAt: Int64?
    /// SPEC §10.4: the state the device reported, absent while it is `active` (and for records written before device
    /// states existed); set by `device_connect.lua` and `device_state.lua`.
    var state: DeviceState? = nil

    enum CodingKeys: String, CodingKey {
        case platform = "p"
        case node = "n"
        case connection = "c"
        case kind = "k"
        case heartbeat = "hb"
        case connectedAt = "ct"
        case state = "s"
    }

    /// The platform of a stored record, read without decoding the whole record (status reads need nothing else).
    /// The record is a JSON object whose `"p"` member is a platform name; inside a JSON string every quote is escaped,
    /// so the byte sequence `"p":"` occurs only as that member's key.
    static func platform(_ value: RedisValue) -> String? {
        guard case .bulkString(let bytes) = value else { return nil }
        let key = Array(#""p":""#.utf8)
        var index = 0
        while index + key.count < bytes.count {
            if bytes[index] == key[0], bytes[index..<index + key.count].elementsEqual(key) {
                let start = index + key.count
                guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
                return String(decoding: bytes[start..<end], as: UTF8.self)
            }
            index += 1
        }
        return decode(value)?.platform
    }

    /// Decodes a stored record, or nil: the scripts' own shape directly (``fastDecode(_:)``), anything else with
    /// `JSONDecoder`.
    static func decode(_ value: RedisValue) -> DeviceRecord? {
        let bytes: [UInt8]
        switch value {
        case .bulkString(let stored): bytes = stored
        case .simpleString(let stored): bytes = Array(stored.utf8)
        case .null, .error, .integer, .array: return nil
        }
        guard !bytes.isEmpty else { return nil }
        if let record = bytes.withUnsafeBytes(fastDecode) { return record }
        return try? JSONCoding.decoder.decode(DeviceRecord.self, from: Data(String(decoding: bytes, as: UTF8.self).utf8))
    }
}
