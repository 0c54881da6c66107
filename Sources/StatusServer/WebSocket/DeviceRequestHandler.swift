import Foundation
import NIOCore
import StatusCore

/// Answers the JSON requests of a device (SPEC §7): the four operations, `heartbeat` and `logout`, through the same
/// ``StatusOperations`` as the HTTP API, so quotas and counters are shared.
struct DeviceRequestHandler: Sendable {
    /// Finds the session's app (a deleted app's sessions get `UNAUTHORIZED`).
    let apps: AppRegistry
    let operations: StatusOperations
    let presence: PresenceOperations
    /// Counts calls refused by the rate limit.
    let metrics: NodeMetrics

    /// A request frame. For `setSelfStatus`, `customStatus` absent keeps it, `null` or `""` clears it (SPEC §4);
    /// `availability` absent keeps it (SPEC §10.1); `clearAfterSeconds` goes with a custom status set (SPEC §10.2).
    struct Frame: Decodable {
        var id: JSONValue?
        var op: String?
        var customStatus: String?
        var availability: String?
        var clearAfterSeconds: Int?
        var userIds: [String]?
        var state: String?

        /// The members each op's frame may have (SPEC §7: unknown fields are `INVALID_REQUEST`); a field added to an
        /// op goes here too.
        static let members: [String: StrictJSON.Members] = [
            "setSelfStatus": StrictJSON.Members(["id", "op", "customStatus", "availability", "clearAfterSeconds"]),
            "getUserStatus": StrictJSON.Members(["id", "op", "userIds"]),
            "subscribeUserStatus": StrictJSON.Members(["id", "op", "userIds"]),
            "unsubscribeUserStatus": StrictJSON.Members(["id", "op", "userIds"]),
            "heartbeat": StrictJSON.Members(["id", "op"]),
            "setDeviceState": StrictJSON.Members(["id", "op", "state"]),
            "logout": StrictJSON.Members(["id", "op"]),
        ]
    }

    /// What the session must do after answering.
    enum After {
        case keepOpen
        /// The device logged out: close without writing anything more to Redis.
        case close
    }

    /// Handles one text message and returns the reply frame to send.
    func handle(_ message: ByteBuffer, session: DeviceSession) async -> (reply: String, after: After) {
        let data = Data(message.readableBytesView)
        // Strict RFC 8259 with one depth rule for objects and arrays alike, checked before any decoder recurses; a
        // frame refused here is still answered with its id when that can be read.
        do {
            try message.withUnsafeReadableBytes { bytes throws(StatusError) in
                try StrictJSON.validate(bytes, maxDepth: JSONValue.maxDecodingDepth, members: nil)
            }
        } catch {
            let id = RequestIdPeek.id(in: message.readableBytesView) ?? .null
            return (DeviceFrames.failure(id: id, ErrorAnswers.statusError(for: error)), .keepOpen)
        }
        guard case .object(let fields) = try? JSONCoding.decoder.decode(JSONValue.self, from: data) else {
            // Valid JSON the decoder still refuses (a number past a Double, say): answered with its id all the same.
            let id = RequestIdPeek.id(in: message.readableBytesView) ?? .null
            return (DeviceFrames.failure(id: id, StatusError(.invalidRequest, "a frame must be a JSON object with id and op")), .keepOpen)
        }
        let id = fields["id"] ?? .null
        let op = fields["op"].flatMap { if case .string(let op) = $0 { op } else { nil } }
        do {
            // Strict RFC 8259, as for HTTP bodies; an unknown op is answered below.
            let members = op.flatMap { Frame.members[$0] }
            try message.withUnsafeReadableBytes { bytes throws(StatusError) in
                try StrictJSON.validate(bytes, maxDepth: JSONValue.maxDecodingDepth, members: members)
            }
        } catch {
            return (DeviceFrames.failure(id: id, ErrorAnswers.statusError(for: error)), .keepOpen)
        }
        guard let frame = try? JSONCoding.decoder.decode(Frame.self, from: data) else {
            return (DeviceFrames.failure(id: id, StatusError(.invalidRequest, "wrong field types")), .keepOpen)
        }
        do {
            guard let app = try await apps.find(session.appId) else { throw StatusError(.unauthorized, "app deleted") }
            switch frame.op {
            case "setSelfStatus":
                let change: CustomStatusChange = fields["customStatus"] == nil ? .keep : .set(frame.customStatus)
                let availability = try SetSelfStatusFields.availability(present: fields["availability"] != nil, frame.availability)
                if fields["clearAfterSeconds"] == JSONValue.null { throw StatusError(.invalidRequest, "clearAfterSeconds must be a number") }
                let status = try await operations.setSelfStatus(
                    app: app,
                    userId: session.userId,
                    customStatus: change,
                    availability: availability,
                    clearAfterSeconds: frame.clearAfterSeconds
                )
                return (try success(id, status), .keepOpen)
            case "getUserStatus":
                return (try success(id, try await operations.getUserStatus(app: app, userId: session.userId, userIds: try ids(frame))), .keepOpen)
            case "subscribeUserStatus":
                return (try success(id, try await operations.subscribe(app: app, userId: session.userId, userIds: try ids(frame))), .keepOpen)
            case "unsubscribeUserStatus":
                return (try success(id, try await operations.unsubscribe(app: app, userId: session.userId, userIds: frame.userIds)), .keepOpen)
            case "heartbeat":
                return (try success(id, Heartbeat(heartbeatSeconds: app.config.heartbeatIntervalSeconds)), .keepOpen)
            case "setDeviceState":
                guard let name = frame.state else { throw StatusError(.invalidRequest, "state is required") }
                let status = try await presence.setDeviceState(
                    app: app,
                    userId: session.userId,
                    deviceId: session.deviceId,
                    state: try DeviceState.parse(name)
                )
                return (try success(id, status), .keepOpen)
            case "logout":
                let result = try await presence.remove(
                    app: app,
                    userId: session.userId,
                    deviceIds: [session.deviceId],
                    because: .logout,
                    connection: session.connectionId
                )
                return (try success(id, result.status), .close)
            default:
                throw StatusError(.invalidRequest, "unknown op")
            }
        } catch {
            let mapped = ErrorAnswers.statusError(for: error)
            if mapped.code == .rateLimited {
                metrics.rateLimited.increment()
                session.activity?.rateLimited.add(1, ordering: .relaxed)
            }
            return (DeviceFrames.failure(id: id, mapped), .keepOpen)
        }
    }

    /// The error reply to a request that is not run (`request` nil for a frame that is not one, e.g. binary): echoes
    /// the request's `id` when it has one.
    func refusal(of request: ByteBuffer?, _ error: StatusError) -> String {
        var id = JSONValue.null
        if let request {
            if case .object(let fields) = try? JSONCoding.decoder.decode(JSONValue.self, from: Data(request.readableBytesView)) {
                id = fields["id"] ?? .null
            } else {
                id = RequestIdPeek.id(in: request.readableBytesView) ?? .null
            }
        }
        if error.code == .rateLimited { metrics.rateLimited.increment() }
        return DeviceFrames.failure(id: id, error)
    }

    /// The heartbeat answer.
    struct Heartbeat: Encodable {
        var heartbeatSeconds: Int
    }

    private func ids(_ frame: Frame) throws(StatusError) -> [String] {
        guard let ids = frame.userIds else { throw StatusError(.invalidRequest, "userIds is required") }
        return ids
    }

    private func success(_ id: JSONValue, _ result: some Encodable) throws -> String {
        try JSONCoding.string(DeviceFrames.Success(id: id, result: result))
    }

    /// A result with a hand-written JSON (a status, a status query) is answered without `JSONEncoder`, in the same bytes.
    private func success(_ id: JSONValue, _ result: some JSONWritable & Encodable) throws -> String {
        try DeviceFrames.success(id: id, result: result)
    }
}
