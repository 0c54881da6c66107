import HummingbirdWSClient
import Logging
import Synchronization

/// One simulated device: connects over WebSocket (`/v1/connect?deviceId=&platform=web&token=`), registers itself once
/// welcomed, writes the change requests it is handed, and counts every `onUserStatusChanged` it receives. A device the
/// loader drops (churn) reconnects at once; a connection that fails or ends by itself is counted and not retried.
struct DeviceRunner: Sendable {
    let connectURLs: [String]
    let tokens: [String]
    let registry: DeviceRegistry
    let stats: LoadStats
    let logger: Logger

    /// State of one connection attempt, shared by its reader and writer.
    final class Attempt: Sendable {
        let welcomed = Atomic<Bool>(false)
        let dropRequested = Atomic<Bool>(false)
        /// Whether this is the device's first attempt, which the connect phase waits for.
        let first: Bool
        private let firstEnded = Atomic<Bool>(false)

        init(first: Bool) {
            self.first = first
        }

        /// Tells the registry the first attempt is over (welcome or failure), once.
        func endFirst(_ registry: DeviceRegistry) {
            guard first, firstEnded.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
            registry.endFirstAttempt()
        }
    }

    static let configuration = WebSocketClientConfiguration(maxFrameSize: 1 << 20, closeTimeout: .seconds(2))

    /// Runs device `device` until the registry stops (or its connection fails). The caller has counted its first attempt
    /// with ``DeviceRegistry/beginFirstAttempt()``.
    func run(device: Int) async {
        let node = registry.node(of: device)
        let user = registry.user(of: device)
        let url = "\(connectURLs[node])?deviceId=d\(device)&platform=web&token=\(tokens[user])"
        var firstAttempt = true
        while !registry.isStopping {
            let attempt = Attempt(first: firstAttempt)
            let started = MonotonicClock.nanos()
            let (commands, continuation) = AsyncStream.makeStream(of: DeviceCommand.self)
            do {
                try await WebSocketClient.connect(url: url, configuration: Self.configuration, logger: logger) { inbound, outbound, _ in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            try await read(
                                inbound,
                                device: device,
                                user: user,
                                node: node,
                                attempt: attempt,
                                started: started,
                                commands: continuation
                            )
                        }
                        group.addTask {
                            for await command in commands {
                                switch command {
                                case .send(let text): try await outbound.writeTextMessage(text)
                                case .drop:
                                    attempt.dropRequested.store(true, ordering: .relaxed)
                                    return
                                }
                            }
                        }
                        try await group.next()
                        group.cancelAll()
                    }
                }
            } catch {
                // Counted below from the attempt's state.
            }
            registry.disconnected(device)
            continuation.finish()
            let welcomed = attempt.welcomed.load(ordering: .relaxed)
            if !welcomed { stats.recordConnectFailure() }
            attempt.endFirst(registry)
            firstAttempt = false
            if registry.isStopping || !welcomed { return }
            if !attempt.dropRequested.load(ordering: .relaxed) {
                stats.recordDrop()
                return
            }
        }
        if firstAttempt { registry.endFirstAttempt() }
    }

    private func read(
        _ inbound: WebSocketInboundStream,
        device: Int,
        user: Int,
        node: Int,
        attempt: Attempt,
        started: UInt64,
        commands: AsyncStream<DeviceCommand>.Continuation
    ) async throws {
        var lastOwnVersion: Int64 = -1
        for try await message in inbound.messages(maxSize: 1 << 20) {
            guard case .text(let text) = message else { continue }
            switch DeviceFrame.parse(text) {
            case .welcome:
                attempt.welcomed.store(true, ordering: .relaxed)
                stats.recordConnect(nanos: MonotonicClock.nanos() &- started)
                let registered = registry.connected(device, commands: commands)
                attempt.endFirst(registry)
                guard registered else { return }
            case .statusChanged(let target, let version, let change):
                if target == user {
                    // Own devices also hear about onlineDevices-only changes, which repeat the version.
                    guard version > lastOwnVersion else {
                        stats.recordOtherEvent()
                        continue
                    }
                    lastOwnVersion = version
                }
                if let change {
                    stats.recordDelivery(sequence: change.sequence, sentMs: change.sentMs, node: node)
                } else {
                    stats.recordOtherEvent()
                }
            case .reply(let ok):
                stats.recordReply(ok: ok)
            case .kicked:
                return
            case .other:
                continue
            }
        }
    }
}
