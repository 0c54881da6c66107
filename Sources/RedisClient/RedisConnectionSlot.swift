import Logging
import NIOCore

/// One connection of the pool, bound to one event loop: all of its state is read and written on that loop only.
///
/// The connection is opened on first use. When it dies, its in-flight commands fail (the handler sees to that) and the
/// next call opens a new one. When opening fails, the slot enters a backoff (50 ms, doubling to 2 s): calls made
/// during the backoff fail at once with `.connectionUnavailable`, and the first call after it tries again. The pool
/// sends calls to other slots while one is in backoff, as long as some slot is not.
final class RedisConnectionSlot: Sendable {
    private enum State {
        /// No connection; the next call opens one.
        case idle
        /// A connection is being opened; requests wait in `Storage.waiting` and are written once it is ready.
        case connecting
        /// Connected: requests are written straight to the channel.
        case connected(any Channel)
        /// Opening failed; calls fail until `until`.
        case backoff(until: NIODeadline, reason: String)
        /// The client was closed.
        case closed
    }

    private struct Storage {
        var state: State = .idle
        var backoff = Backoff()
        /// Requests waiting for the connection being opened, and how many commands they hold.
        var waiting: [RedisRequest] = []
        var waitingCount = 0
        /// A flush is queued for the end of this event-loop tick.
        var flushScheduled = false
    }

    /// The loop the slot's state and its channel live on.
    let eventLoop: any EventLoop
    private let storage: NIOLoopBoundBox<Storage>
    /// The end of the current backoff, readable from any thread so the pool can route calls around this slot.
    private let backoffEnd = LockedValue<NIODeadline?>(nil)
    private let configuration: RedisConfiguration
    private let logger: Logger
    private let metrics: RedisClientMetrics

    init(eventLoop: any EventLoop, configuration: RedisConfiguration, logger: Logger, metrics: RedisClientMetrics) {
        self.eventLoop = eventLoop
        self.storage = .makeBoxSendingValue(Storage(), eventLoop: eventLoop)
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
    }

    /// Whether the slot is in its reconnect backoff (calls on it would fail at once).
    var isInBackoff: Bool {
        guard let end = self.backoffEnd.withLock({ $0 }) else {
            return false
        }
        return NIODeadline.now() < end
    }

    /// Writes `request` on this slot's connection (opening it if needed), from any thread.
    func submit(_ request: RedisRequest) {
        if self.eventLoop.inEventLoop {
            self.submitOnLoop(request)
        } else {
            self.eventLoop.execute {
                self.submitOnLoop(request)
            }
        }
    }

    /// Closes the connection; its in-flight and waiting requests fail with `.connectionClosed`. Later calls fail too.
    func close() -> EventLoopFuture<Void> {
        self.eventLoop.flatSubmit {
            let previous = self.storage.value.state
            self.storage.value.state = .closed
            switch previous {
            case .connected(let channel):
                return channel.close().recover { _ in }
            case .connecting:
                let error = RedisClientError(kind: .connectionClosed, message: "the redis client was closed")
                let waiting = self.takeWaiting()
                for request in waiting {
                    request.response.fail(error)
                }
                return self.eventLoop.makeSucceededVoidFuture()
            case .idle, .backoff, .closed:
                return self.eventLoop.makeSucceededVoidFuture()
            }
        }
    }

    /// Flushes once for all the requests submitted in this event-loop tick: they go out in one write instead of one
    /// `write` syscall each.
    private func scheduleFlush() {
        guard !self.storage.value.flushScheduled else {
            return
        }
        self.storage.value.flushScheduled = true
        self.eventLoop.execute {
            self.storage.value.flushScheduled = false
            if case .connected(let channel) = self.storage.value.state {
                channel.flush()
            }
        }
    }

    private func submitOnLoop(_ request: RedisRequest) {
        switch self.storage.value.state {
        case .connected(let channel):
            if channel.isActive {
                channel.write(request, promise: nil)
                self.scheduleFlush()
            } else {
                // Closed, but the close callback has not run yet: open a new connection now.
                self.startConnecting(with: request)
            }
        case .connecting:
            let count = request.response.count
            let waitingCount = self.storage.value.waitingCount
            guard waitingCount + count <= self.configuration.maxPendingPerConnection else {
                request.response.fail(
                    RedisClientError(kind: .tooManyPending, message: "\(waitingCount) commands are already waiting for a redis connection")
                )
                return
            }
            self.storage.value.waiting.append(request)
            self.storage.value.waitingCount += count
        case .backoff(let until, let reason):
            if NIODeadline.now() < until {
                request.response.fail(RedisClientError(kind: .connectionUnavailable, message: reason))
            } else {
                self.startConnecting(with: request)
            }
        case .idle:
            self.startConnecting(with: request)
        case .closed:
            request.response.fail(RedisClientError(kind: .connectionClosed, message: "the redis client was closed"))
        }
    }

    private func startConnecting(with request: RedisRequest) {
        guard request.response.count <= self.configuration.maxPendingPerConnection else {
            request.response.fail(RedisClientError(kind: .tooManyPending, message: "the pipeline is longer than maxPendingPerConnection"))
            return
        }
        self.storage.value.state = .connecting
        self.storage.value.waiting = [request]
        self.storage.value.waitingCount = request.response.count
        RedisConnector.connectCommandChannel(configuration: self.configuration, eventLoop: self.eventLoop, logger: self.logger)
            .hop(to: self.eventLoop)
            .assumeIsolated()
            .whenComplete { result in
                self.connectCompleted(result)
            }
    }

    private func takeWaiting() -> [RedisRequest] {
        let waiting = self.storage.value.waiting
        self.storage.value.waiting = []
        self.storage.value.waitingCount = 0
        return waiting
    }

    private func connectCompleted(_ result: Result<any Channel, any Error>) {
        guard case .connecting = self.storage.value.state else {
            // Closed while connecting: the waiting requests were failed by `close()`.
            if case .success(let channel) = result {
                channel.close(promise: nil)
            }
            return
        }
        let waiting = self.takeWaiting()
        switch result {
        case .success(let channel):
            self.logger.debug("Connected to redis", metadata: ["endpoint": "\(self.configuration.endpoint.logDescription)"])
            self.metrics.connects.increment()
            self.storage.value.state = .connected(channel)
            self.storage.value.backoff.reset()
            self.backoffEnd.withLock { $0 = nil }
            channel.closeFuture.hop(to: self.eventLoop).assumeIsolated().whenComplete { _ in
                if case .connected(let current) = self.storage.value.state, current === channel {
                    self.logger.info("Redis connection closed", metadata: ["endpoint": "\(self.configuration.endpoint.logDescription)"])
                    self.metrics.disconnects.increment()
                    self.storage.value.state = .idle
                }
            }
            for request in waiting {
                channel.write(request, promise: nil)
            }
            channel.flush()
        case .failure(let error):
            let reason = (error as? RedisClientError)?.message ?? "cannot connect to redis: \(error)"
            let delay = self.storage.value.backoff.nextDelay()
            let end = NIODeadline.now() + delay
            self.storage.value.state = .backoff(until: end, reason: reason)
            self.backoffEnd.withLock { $0 = end }
            self.metrics.connectFailures.increment()
            self.logger.warning("Redis connection failed", metadata: ["error": "\(reason)", "retryAfterMs": "\(delay.nanoseconds / 1_000_000)"])
            let failure = RedisClientError(kind: .connectionUnavailable, message: reason)
            for request in waiting {
                request.response.fail(failure)
            }
        }
    }
}
