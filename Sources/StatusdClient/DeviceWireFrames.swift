import Foundation

/// The frames of the device WebSocket (SPEC §7) as the client reads them: one decodable shape for events and replies,
/// with the fields each kind uses; fields it does not know are ignored, so a newer server's additions decode.
struct InboundFrame: Decodable {
    var event: String?
    var id: String?
    var ok: Bool?
    var error: ErrorBody.Detail?
    var statuses: [UserStatus]?
    var snapshot: Bool?
    var truncated: Bool?
    var reason: String?
}

/// A reply's `result`, decoded once the request that waits for it knows its type.
struct ReplyFrame<Result: Decodable>: Decodable {
    var result: Result
}

/// `{"id": "7", "op": "…", …fields}`: the fields' own members sit beside `id` and `op`.
struct RequestFrame<Fields: Encodable>: Encodable {
    var id: String
    var op: String
    var fields: Fields

    private enum CodingKeys: String, CodingKey {
        case id, op
    }

    func encode(to encoder: any Encoder) throws {
        try fields.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(op, forKey: .op)
    }
}

/// The fields of `heartbeat` and `logout`: none.
struct NoFields: Codable {}

/// The `heartbeat` reply's result.
struct HeartbeatResult: Decodable {
    var heartbeatSeconds: Int?
}
