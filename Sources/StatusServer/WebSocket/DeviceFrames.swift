import StatusCore

/// The JSON text frames of the device WebSocket (SPEC §7).
enum DeviceFrames {
    /// `{"event": "welcome", "userId", "deviceId", "heartbeatSeconds", "status", "resume"}`; `resume` is the token a
    /// reconnect presents to be sent what it missed (SPEC §7, ``ResumePoint``).
    struct Welcome: Encodable, Sendable {
        var event = "welcome"
        var userId: String
        var deviceId: String
        var heartbeatSeconds: Int
        var status: UserStatus
        var resume: String
    }

    /// `{"event": "onUserStatusChanged", "statuses": [...]}`.
    struct StatusChanged: Encodable, Sendable {
        var event = "onUserStatusChanged"
        var statuses: [UserStatus]
        /// Set on a resume that fell back to a snapshot whose scope part was cut at its bound.
        var truncated: Bool? = nil
    }

    /// `{"event": "onUserStatusChanged", "snapshot": true, "statuses": [...], "truncated": true?}` (SPEC §10.6).
    struct Snapshot: Encodable, Sendable {
        var event = "onUserStatusChanged"
        var snapshot = true
        var statuses: [UserStatus]
        var truncated: Bool?
    }

    /// `{"event": "kicked", "reason": "..."}`.
    struct Kicked: Encodable {
        var event = "kicked"
        var reason: String
    }

    /// `{"id", "ok": true, "result"}`.
    struct Success<Result: Encodable>: Encodable {
        var id: JSONValue
        var ok = true
        var result: Result
    }

    /// `{"id", "ok": false, "error": {"code", "message", "retryAfterMs"?}}`.
    struct Failure: Encodable {
        var id: JSONValue
        var ok = false
        var error: StatusError

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(id, forKey: .id)
            try container.encode(ok, forKey: .ok)
            var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .error)
            try nested.encode(error.code.rawValue, forKey: .code)
            try nested.encode(error.message, forKey: .message)
            try nested.encodeIfPresent(error.retryAfterMs, forKey: .retryAfterMs)
        }

        enum Keys: String, CodingKey {
            case id
            case ok
            case error
            case code
            case message
            case retryAfterMs
        }
    }

    /// The answer `{"id", "ok": true, "result"}` of a request whose result has a hand-written JSON (a status: every
    /// setSelfStatus over a socket; a status query), written without `JSONEncoder` when the id is a number, a string or null (what
    /// clients send); the same bytes `JSONEncoder` gives (`JSONOutputTests`).
    static func success(id: JSONValue, result: some JSONWritable & Encodable) throws -> String {
        var output = JSONOutput()
        switch id {
        case .int(let value):
            output.raw(#"{"id":"#)
            output.integer(value)
        case .string(let value):
            output.raw(#"{"id":"#)
            output.string(value)
        case .null:
            output.raw(#"{"id":null"#)
        case .bool, .double, .array, .object: return try JSONCoding.string(Success(id: id, result: result))
        }
        output.raw(#","ok":true,"result":"#)
        result.writeJSON(to: &output)
        output.byte(UInt8(ascii: "}"))
        return String(decoding: output.bytes, as: UTF8.self)
    }

    static func kicked(_ reason: String) -> String {
        (try? JSONCoding.string(Kicked(reason: reason))) ?? #"{"event":"kicked"}"#
    }

    static func failure(id: JSONValue, _ error: StatusError) -> String {
        (try? JSONCoding.string(Failure(id: id, error: error))) ?? #"{"ok":false}"#
    }
}
