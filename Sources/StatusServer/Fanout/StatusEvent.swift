import NIOCore
import StatusCore

/// One `onUserStatusChanged` event, encoded once per change and shared by every recipient.
///
/// `frame` is the complete WebSocket text frame `{"event":"onUserStatusChanged","statuses":[<status>]}`, written as is
/// to every socket that is keeping up. `status` is the JSON of the status object alone: a device that fell behind
/// gets its pending statuses coalesced into one frame (``coalesced(_:)``), every version kept, in order.
struct StatusEvent: Sendable {
    /// The whole frame, header included.
    let frame: ByteBuffer
    /// The status object's JSON.
    let status: ByteBuffer
    /// Whose status it is (``ResumePoint/userKey(_:)``, computed once here for every recipient), and its version
    /// (``RecentDeliveries``).
    let userKey: UInt64
    let version: Int64

    private static let prefix = #"{"event":"onUserStatusChanged","statuses":["#
    private static let suffix = "]}"

    /// Encodes `status` once.
    init(_ status: UserStatus) {
        self.init(statusJSON: ByteBuffer(bytes: status.jsonBytes), userId: status.userId, version: status.version)
    }

    /// Wraps an already encoded status object.
    init(statusJSON: ByteBuffer, userId: String, version: Int64) {
        self.status = statusJSON
        self.userKey = ResumePoint.userKey(userId)
        self.version = version
        let length = Self.prefix.utf8.count + statusJSON.readableBytes + Self.suffix.utf8.count
        var frame = ByteBufferAllocator().buffer(capacity: length + WebSocketWire.maxHeaderBytes)
        WebSocketWire.writeHeader(.text, length: length, into: &frame)
        frame.writeString(Self.prefix)
        frame.writeImmutableBuffer(statusJSON)
        frame.writeString(Self.suffix)
        self.frame = frame
    }

    /// One frame carrying every status in `statuses`, in order.
    static func coalesced(_ statuses: [ByteBuffer]) -> ByteBuffer {
        let commas = max(0, statuses.count - 1)
        let length = prefix.utf8.count + statuses.reduce(0) { $0 + $1.readableBytes } + commas + suffix.utf8.count
        var frame = ByteBufferAllocator().buffer(capacity: length + WebSocketWire.maxHeaderBytes)
        WebSocketWire.writeHeader(.text, length: length, into: &frame)
        frame.writeString(prefix)
        for (position, status) in statuses.enumerated() {
            if position > 0 { frame.writeInteger(UInt8(ascii: ",")) }
            frame.writeImmutableBuffer(status)
        }
        frame.writeString(suffix)
        return frame
    }
}
