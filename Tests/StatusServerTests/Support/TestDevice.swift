import Foundation
import Hummingbird
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import StatusCore
import Synchronization

/// A device connected to a live statusd over a real WebSocket, recording every frame it receives.
final class TestDevice: Sendable {
    private let received = Mutex<[JSONValue]>([])
    private let texts = Mutex<[String]>([])
    private let writer = Mutex<WebSocketOutboundWriter?>(nil)
    private let closed = Atomic<Bool>(false)
    private let closeCodeValue = Mutex<UInt16?>(nil)
    private let closedAtValue = Mutex<ContinuousClock.Instant?>(nil)
    private let counter = Atomic<Int>(0)

    /// Sends a JSON frame.
    func send(_ frame: JSONValue) async throws {
        guard let writer = writer.withLock({ $0 }) else { throw TestAppError(message: "device not connected") }
        try await writer.writeTextMessage(String(decoding: try JSONEncoder().encode(frame), as: UTF8.self))
    }

    /// Sends a raw text frame.
    func sendRaw(_ text: String) async throws {
        guard let writer = writer.withLock({ $0 }) else { throw TestAppError(message: "device not connected") }
        try await writer.writeTextMessage(text)
    }

    /// Sends a request `{"id", "op", ...}` and waits for the reply with that id (events received meanwhile are kept).
    func request(_ op: String, _ fields: [String: JSONValue] = [:], timeout: Duration = .seconds(3)) async throws -> JSONValue {
        let id = "r\(counter.wrappingAdd(1, ordering: .relaxed).newValue)"
        var frame = fields
        frame["id"] = .string(id)
        frame["op"] = .string(op)
        try await send(.object(frame))
        return try await next(timeout: timeout) { $0["id"].string == id }
    }

    /// Waits for (and removes) the first received frame matching `predicate`.
    func next(timeout: Duration = .seconds(3), where predicate: @escaping (JSONValue) -> Bool = { _ in true }) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let found = received.withLock { frames -> JSONValue? in
                guard let index = frames.firstIndex(where: predicate) else { return nil }
                return frames.remove(at: index)
            }
            if let found { return found }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TestAppError(message: "no matching frame within \(timeout); have \(received.withLock { $0 })")
    }

    /// Waits until a frame matching `predicate` has arrived, without removing it.
    func waitFor(timeout: Duration = .seconds(3), where predicate: @escaping (JSONValue) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !received.withLock({ $0.contains(where: predicate) }) {
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "no matching frame within \(timeout)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Waits for the next `onUserStatusChanged` about `userId` and returns its status object.
    func nextStatus(of userId: String, timeout: Duration = .seconds(3)) async throws -> JSONValue {
        let event = try await next(timeout: timeout) { frame in
            frame["event"].string == "onUserStatusChanged" && frame["statuses"][0]["userId"].string == userId
        }
        return event["statuses"][0]
    }

    /// Waits for the next `onUserStatusChanged` about `userId` at a version above `version` and returns its status
    /// object; repeats at `version` or below are taken and passed over (SPEC §2: an event may come twice, and a client
    /// drops it by its version).
    func nextStatus(of userId: String, newerThan version: Int64, timeout: Duration = .seconds(3)) async throws -> JSONValue {
        let event = try await next(timeout: timeout) { frame in
            frame["event"].string == "onUserStatusChanged" && frame["statuses"][0]["userId"].string == userId
                && (frame["statuses"][0]["version"].int ?? 0) > version
        }
        received.withLock { frames in
            frames.removeAll {
                $0["event"].string == "onUserStatusChanged" && $0["statuses"][0]["userId"].string == userId
                    && ($0["statuses"][0]["version"].int ?? 0) <= version
            }
        }
        return event["statuses"][0]
    }

    /// The status events about `userId` received so far (removing them), after waiting `settle`.
    func statusEvents(of userId: String, settle: Duration = .milliseconds(400)) async throws -> [JSONValue] {
        try await Task.sleep(for: settle)
        return received.withLock { frames in
            let matching = frames.filter { $0["event"].string == "onUserStatusChanged" && $0["statuses"][0]["userId"].string == userId }
            frames.removeAll { $0["event"].string == "onUserStatusChanged" && $0["statuses"][0]["userId"].string == userId }
            return matching.map { $0["statuses"][0] }
        }
    }

    /// The status events about `userId` received so far (removing them), once one at `version` or later has arrived
    /// (within `timeout`); at once when `version` is not above `heard`, the highest version already taken. A watcher
    /// waits by version this way instead of for a time window, so a busy machine delays its events without moving them.
    func statusEvents(of userId: String, reaching version: Int64, after heard: Int64, timeout: Duration = .seconds(5)) async throws -> [JSONValue] {
        if version > heard {
            try await waitFor(timeout: timeout) { frame in
                frame["event"].string == "onUserStatusChanged" && frame["statuses"][0]["userId"].string == userId
                    && (frame["statuses"][0]["version"].int ?? 0) >= version
            }
        }
        return try await statusEvents(of: userId, settle: .zero)
    }

    /// Every text frame received so far, as sent (the welcome included), in arrival order.
    var rawFrames: [String] { texts.withLock { $0 } }

    /// Whether the server closed the socket.
    var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// Waits until the server closes the socket.
    func waitClosed(timeout: Duration = .seconds(3)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !isClosed {
            guard ContinuousClock.now < deadline else { throw TestAppError(message: "socket still open after \(timeout)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Closes the socket from the client side.
    func close() async {
        try? await writer.withLock { $0 }?.close(.normalClosure, reason: nil)
    }

    fileprivate func attach(_ outbound: WebSocketOutboundWriter) {
        writer.withLock { $0 = outbound }
    }

    /// Keeps a received frame; an `onUserStatusChanged` that coalesces several statuses is kept as one frame per
    /// status, in order, so tests look at each change alone.
    fileprivate func record(_ text: String) {
        texts.withLock { $0.append(text) }
        let frame = (try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .string(text)
        if frame["event"].string == "onUserStatusChanged", case .array(let statuses) = frame["statuses"], statuses.count > 1 {
            received.withLock { frames in
                for status in statuses { frames.append(["event": "onUserStatusChanged", "statuses": [status]]) }
            }
            return
        }
        received.withLock { $0.append(frame) }
    }

    fileprivate func markClosed(code: UInt16? = nil) {
        closeCodeValue.withLock { $0 = code }
        closedAtValue.withLock { $0 = .now }
        closed.store(true, ordering: .relaxed)
    }

    /// When the socket was seen closed.
    var closedAt: ContinuousClock.Instant? { closedAtValue.withLock { $0 } }

    /// The close code the server sent, once closed (nil when the connection ended without a close frame).
    var closeCode: UInt16? { closeCodeValue.withLock { $0 } }

    fileprivate var isAttached: Bool { writer.withLock { $0 != nil } }
}

/// How a test device connects.
struct DeviceOptions {
    var deviceId: String
    var platform = "web"
    var presence: String?
    /// Put the token in the query (`?token=`) instead of the Authorization header.
    var tokenInQuery = false
    /// Keep reading (false simulates a device that stops reading its socket).
    var reads = true
    /// The `Origin` header a browser would send, if any.
    var origin: String?
    /// A `resume` token to send back (SPEC §7).
    var resume: String?
    /// Ask for a snapshot after the welcome (SPEC §10.6).
    var snapshot = false
}

extension APIClient {
    /// A user token minted through the server API (a refused call changes nothing, so a 503 on a busy machine is sent
    /// again, as ``retryingUnavailable`` does for the other set-up calls).
    func token(for userId: String, ttlSeconds: Int = 3600) async throws -> String {
        let response = try await retryingUnavailable {
            try await call(.post, "/users/\(userId)/tokens", ["ttlSeconds": .int(Int64(ttlSeconds))])
        }
        guard let token = response.body["token"].string else { throw TestAppError(message: "token minting failed: \(response.body)") }
        return token
    }

    /// Connects a device of `userId` to the live server on `port`, waits for `welcome`, runs `body`, then closes.
    func withDevice<Value: Sendable>(
        port: Int,
        userId: String,
        _ options: DeviceOptions,
        _ body: @Sendable (TestDevice, JSONValue) async throws -> Value
    ) async throws -> Value {
        try await withThrowingTaskGroup(of: Void.self) { group in
            let (device, welcome) = try await openDevice(port: port, userId: userId, options) { group.addTask(operation: $0) }
            let value = try await body(device, welcome)
            await device.close()
            // The close handshake ends the client's task on its own, within the configuration's close timeout; a
            // cancellation at once would also cancel the task that enforces that timeout.
            if options.reads {
                let deadline = ContinuousClock.now + .seconds(3)
                while !device.isClosed && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            }
            group.cancelAll()
            return value
        }
    }

    /// Connects a device of `userId` on a task handed to `spawn` (a task group's `addTask`), waits for its welcome and
    /// returns it; the device stays connected until it is closed or the task is cancelled.
    func openDevice(
        port: Int,
        userId: String,
        _ options: DeviceOptions,
        spawn: (@escaping @Sendable () async throws -> Void) -> Void
    ) async throws -> (TestDevice, JSONValue) {
        let token = try await token(for: userId)
        var query = "deviceId=\(options.deviceId)&platform=\(options.platform)"
        if let presence = options.presence { query += "&presence=\(presence)" }
        if let resume = options.resume { query += "&resume=\(resume)" }
        if options.snapshot { query += "&snapshot=true" }
        var headers: HTTPFields = [:]
        if options.tokenInQuery { query += "&token=\(token)" } else { headers[.authorization] = "Bearer \(token)" }
        if let origin = options.origin { headers[.origin] = origin }
        let url = "ws://127.0.0.1:\(port)/v1/connect?\(query)"
        let device = TestDevice()
        var logger = Logger(label: "test-device")
        logger.logLevel = .critical
        let reads = options.reads
        // A server that never answers a close frame is given up on after 2 s, not the library's 15.
        let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20, additionalHeaders: headers, closeTimeout: .seconds(2))
        let clientLogger = logger
        spawn {
            let close = try? await WebSocketClient.connect(url: url, configuration: configuration, logger: clientLogger) { inbound, outbound, _ in
                device.attach(outbound)
                if !reads {
                    try await Task.sleep(for: .seconds(30))
                    return
                }
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message { device.record(text) }
                }
            }
            device.markClosed(code: (close ?? nil).map { UInt16(webSocketErrorCode: $0.closeCode) })
        }
        let deadline = ContinuousClock.now + .seconds(5)
        while !device.isAttached && !device.isClosed && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        guard device.isAttached else { throw TestAppError(message: "device \(options.deviceId) of \(userId) could not connect") }
        let welcome = reads ? try await device.next { $0["event"].string == "welcome" } : .null
        return (device, welcome)
    }
}

extension UInt16 {
    /// The number of a close code as sent on the wire.
    init(webSocketErrorCode code: WebSocketErrorCode) {
        switch code {
        case .normalClosure: self = 1000
        case .goingAway: self = 1001
        case .protocolError: self = 1002
        case .unacceptableData: self = 1003
        case .dataInconsistentWithMessage: self = 1007
        case .policyViolation: self = 1008
        case .messageTooLarge: self = 1009
        case .missingExtension: self = 1010
        case .unexpectedServerError: self = 1011
        case .unknown(let raw): self = raw
        }
    }
}
