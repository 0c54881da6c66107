import Foundation
import RedisClient

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

    enum CodingKeys: String, CodingKey {
        case platform = "p"
        case node = "n"
        case connection = "c"
        case kind = "k"
        case heartbeat = "hb"
        case connectedAt = "ct"
    }

    /// Decodes a stored record, or nil.
    static func decode(_ value: RedisValue) -> DeviceRecord? {
        guard let raw = value.string, !raw.isEmpty else { return nil }
        return try? JSONCoding.decoder.decode(DeviceRecord.self, from: Data(raw.utf8))
    }
}
