import RedisClient

/// Builders of the values a script's reply holds, for decoding tests without Redis.
enum Canned {
    static func text(_ string: String) -> RedisValue { .bulkString(Array(string.utf8)) }

    static func int(_ value: Int64) -> RedisValue { .integer(value) }

    /// A `lib.lua` `status_reply`: online, custom status "busy", version 7, one web device.
    static let status: [RedisValue] = [
        text("online"), text("busy"), text("1700000000000"), text("7"), text("admin"), text(""), text(""), text("7"),
        text(""), text(""), text(""), text(""), text("d1"), text("web"),
    ]

    /// A stored device record.
    static let device = text(#"{"p":"ios","n":"node-1","c":"conn-1","k":"ws"}"#)

    static func array(_ values: [RedisValue]) -> RedisValue { .array(values) }
}
