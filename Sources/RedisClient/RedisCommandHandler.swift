import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The channel handler of a command connection: writes ``RedisRequest``s, decodes replies with hiredis and completes
/// the requests' promises in FIFO order.
///
/// The hiredis reader copies the bytes it is fed, so this is a plain inbound handler (a `ByteToMessageDecoder` would
/// see an emptied buffer): every read is fed to the reader, then replies are taken until there are none left.
/// Everything here runs on the channel's event loop, including the reader's creation, use and release.
///
/// One timer per connection enforces the command timeout: if the oldest pending command has had no reply within the
/// timeout, nothing behind it can have had one either, so every pending command fails and the connection is aborted.
///
/// Aborted, not closed: the callers were told their commands failed, so none of them may still reach Redis. A graceful
/// close would leave the commands the kernel has not sent yet in its send buffer, and a silent network path that comes
/// back seconds later would deliver them (SPEC §7: a refused request changes nothing, later included). `SO_LINGER` 0
/// makes the close drop them and reset the connection.
final class RedisCommandHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = RedisRequest
    typealias OutboundOut = ByteBuffer

    private struct Pending {
        var response: RedisRequest.Response
        var deadline: NIODeadline
    }

    private let decoder = RedisReplyDecoder()
    private let commandTimeout: TimeAmount
    private let maxPending: Int
    private let logger: Logger
    private var queue = CircularBuffer<Pending>(initialCapacity: 16)
    /// Replies collected so far for the `.multiple` request at the head of the queue.
    private var collected: [RedisValue] = []
    /// Commands written whose reply has not arrived.
    private var pendingCount = 0
    private var timer: Scheduled<Void>?
    private var isClosed = false

    init(commandTimeout: TimeAmount, maxPending: Int, logger: Logger) {
        self.commandTimeout = commandTimeout
        self.maxPending = maxPending
        self.logger = logger
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = self.unwrapOutboundIn(data)
        let count = request.response.count
        if self.isClosed {
            let error = RedisClientError(kind: .connectionClosed, message: "the connection to redis is closed")
            request.response.fail(error)
            promise?.fail(error)
            return
        }
        if self.pendingCount + count > self.maxPending {
            let error = RedisClientError(
                kind: .tooManyPending,
                message: "\(self.pendingCount) commands are already in flight on this connection (limit \(self.maxPending))"
            )
            request.response.fail(error)
            promise?.fail(error)
            return
        }
        self.queue.append(Pending(response: request.response, deadline: .now() + self.commandTimeout))
        self.pendingCount += count
        context.write(self.wrapOutboundOut(request.bytes), promise: promise)
        self.scheduleTimerIfNeeded(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.decoder.feed(self.unwrapInboundIn(data))
        do {
            while !self.isClosed, let value = try self.decoder.next() {
                try self.deliver(value)
            }
        } catch let error as RedisClientError {
            self.logger.error("Closing redis connection", metadata: ["error": "\(error)"])
            self.failAll(error)
            context.close(promise: nil)
        } catch {
            self.failAll(RedisClientError(kind: .protocolError, message: "\(error)"))
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.isClosed = true
        self.timer?.cancel()
        self.timer = nil
        self.failAll(RedisClientError(kind: .connectionClosed, message: "the connection to redis closed"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.logger.debug("Redis connection error", metadata: ["error": "\(error)"])
        self.failAll(RedisClientError(kind: .connectionClosed, message: "the connection to redis failed: \(error)"))
        context.close(promise: nil)
    }

    /// Hands one reply to the oldest pending request. State is updated before the promise completes, as completing
    /// it may run callbacks that write again.
    private func deliver(_ value: RedisValue) throws {
        guard let head = self.queue.first else {
            throw RedisClientError(kind: .protocolError, message: "redis sent a reply nobody asked for: \(value)")
        }
        self.pendingCount -= 1
        switch head.response {
        case .single(let promise):
            self.queue.removeFirst()
            promise.succeed(value)
        case .multiple(let count, let promise):
            self.collected.append(value)
            if self.collected.count == count {
                self.queue.removeFirst()
                let values = self.collected
                self.collected = []
                promise.succeed(values)
            }
        }
    }

    private func failAll(_ error: RedisClientError) {
        let failed = self.queue
        self.queue.removeAll()
        self.collected = []
        self.pendingCount = 0
        for pending in failed {
            pending.response.fail(error)
        }
    }

    private func scheduleTimerIfNeeded(context: ChannelHandlerContext) {
        guard self.timer == nil, let head = self.queue.first else {
            return
        }
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: head.deadline) {
            self.timer = nil
            self.checkTimeout(context: context)
        }
    }

    private func checkTimeout(context: ChannelHandlerContext) {
        guard let head = self.queue.first, !self.isClosed else {
            return
        }
        guard head.deadline <= .now() else {
            self.scheduleTimerIfNeeded(context: context)
            return
        }
        let timeout = RedisClientError(kind: .timeout, message: "no reply from redis within \(self.commandTimeout)")
        let closed = RedisClientError(kind: .connectionClosed, message: "the connection to redis was closed after a command timed out")
        let now = NIODeadline.now()
        let failed = self.queue
        self.queue.removeAll()
        self.collected = []
        self.pendingCount = 0
        self.logger.warning("Redis command timed out, aborting the connection", metadata: ["pending": "\(failed.count)"])
        self.isClosed = true
        Self.abort(context.channel)
        for pending in failed {
            pending.response.fail(pending.deadline <= now ? timeout : closed)
        }
    }

    /// Closes `channel` with a reset, dropping whatever the kernel still holds unsent (`SO_LINGER` 0).
    static func abort(_ channel: any Channel) {
        guard let socket = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
