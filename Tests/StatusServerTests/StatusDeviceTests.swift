import Foundation
import StatusdClient
import Testing

@testable import StatusdClient

/// The device client against a live statusd: the welcome and snapshot, live changes, reconnect with `resume` after the
/// server closes the socket, and a kick that ends it.
@Suite(.redis) struct StatusDeviceTests {
    /// An app where alice subscribes to bob; devices heartbeat-time-out after 5 s.
    private func setUp(_ api: APIClient) async throws -> (APIClient, StatusdApp) {
        let bound = try await api.createApp(config: ["plan": "premium", "statusQuery": true, "heartbeatTimeoutSeconds": 5])
        let app = try bound.appFacade()
        try await app.putUser("alice")
        try await app.putUser("bob")
        try await app.subscribeUserStatus(["bob"], for: "alice")
        return (bound, app)
    }

    private func device(
        _ api: APIClient,
        _ app: StatusdApp,
        _ change: (inout StatusDeviceConfiguration) -> Void = { _ in }
    ) throws
        -> StatusDevice
    {
        var configuration = StatusDeviceConfiguration(serverURL: try api.endpoint().serverURL, deviceId: "alice-phone", platform: .ios)
        configuration.requestTimeout = .seconds(3)
        change(&configuration)
        return StatusDevice(configuration: configuration) { try await app.mintToken(for: "alice", ttlSeconds: 600).token }
    }

    /// Runs the device for at most `limit`: then its events end, so that a test waiting for one that never comes fails
    /// instead of hanging.
    private func run(_ device: StatusDevice, atMost limit: Duration = .seconds(30)) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await device.run() }
            group.addTask { try await Task.sleep(for: limit) }
            try await group.next()
            group.cancelAll()
        }
    }

    /// The next event that `match` accepts (others are skipped), within `timeout`.
    private func next<Value: Sendable>(
        _ events: inout AsyncStream<StatusDeviceEvent>.Iterator,
        within timeout: Duration = .seconds(5),
        _ match: (StatusDeviceEvent) -> Value?
    ) async throws -> Value {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let event = await events.next() else { throw TestAppError(message: "the device's events ended") }
            if let value = match(event) { return value }
        }
        throw TestAppError(message: "no matching event within \(timeout)")
    }

    /// bob's status in a live (not snapshot) `statusChanged`.
    private func bobIn(_ event: StatusDeviceEvent) -> UserStatus? {
        guard case .statusChanged(let statuses, false, _) = event else { return nil }
        return statuses.first { $0.userId == "bob" }
    }

    @Test func theDeviceReconnectsWithResumeAfterTheServerClosesItsSocket() async throws {
        try await withStatusd(.live) { api in
            let (_, app) = try await setUp(api)
            // Heartbeats slower than the app's 5 s timeout: the server gives up on the device and closes its socket.
            let device = try device(api, app) {
                $0.heartbeatInterval = .seconds(60)
                $0.minReconnectDelay = .seconds(1)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await run(device) }
                var events = device.events.makeAsyncIterator()
                let first = try await next(&events) { if case .welcome(let welcome) = $0 { welcome } else { nil } }
                #expect(first.userId == "alice" && first.deviceId == "alice-phone")
                let firstResume = try #require(first.resume)
                let snapshot = try await next(&events) { if case .statusChanged(let statuses, true, _) = $0 { statuses } else { nil } }
                #expect(snapshot.map(\.userId) == ["bob"])

                try await app.setSelfStatus("bob", customStatus: "live")
                let live = try await next(&events) { bobIn($0) }
                #expect(live.customStatus == "live")

                let cause = try await next(&events, within: .seconds(12)) { if case .reconnecting(1, _, let cause) = $0 { cause } else { nil } }
                #expect(!cause.isEmpty)
                // Made while the device is away (its first retry waits at least 0.5 s).
                let missed = try await app.setSelfStatus("bob", customStatus: "missed")

                let second = try await next(&events) { if case .welcome(let welcome) = $0 { welcome } else { nil } }
                #expect(second.resume != nil && second.resume != firstResume)
                // The resume's frame, before the snapshot.
                let bob = try await next(&events) { bobIn($0) }
                #expect(bob.customStatus == "missed" && bob.version == missed.version)
                _ = try await next(&events) { if case .statusChanged(_, true, _) = $0 { true } else { nil } }
                #expect(device.isConnected)
                #expect(try await device.getUserStatus(["bob"]).statuses.first?.customStatus == "missed")
                group.cancelAll()
            }
        }
    }

    @Test func requestsGoByIdAndAKickEndsTheDevice() async throws {
        try await withStatusd(.live) { api in
            let (_, app) = try await setUp(api)
            let device = try device(api, app)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await run(device) }
                var events = device.events.makeAsyncIterator()
                _ = try await next(&events) { if case .welcome(let welcome) = $0 { welcome } else { nil } }
                async let set = device.setSelfStatus(customStatus: "on the phone")
                async let query = device.getUserStatus(["alice", "bob"])
                #expect(try await set.customStatus == "on the phone")
                #expect(try await query.statuses.map(\.userId).sorted() == ["alice", "bob"])
                let refused = await #expect(throws: StatusdError.self) { try await device.subscribeUserStatus(["nobody!"]) }
                #expect(refused?.code == .invalidUserId && refused?.httpStatus == nil)

                #expect(try await app.kick("alice") == ["alice-phone"])
                let reason = try await next(&events) { if case .kicked(let reason) = $0 { reason } else { nil } }
                #expect(!reason.isEmpty)
                try await group.next()
                #expect(await events.next() == nil, "the events end with the device")
            }
        }
    }

    /// A consumer that stops reading loses the oldest events, and the device reconnects so that a snapshot brings it
    /// the current statuses.
    @Test func aConsumerThatFellBehindIsBroughtBackByASnapshot() async throws {
        try await withStatusd(.live) { api in
            let (_, app) = try await setUp(api)
            let device = try device(api, app) { $0.eventBufferSize = 4 }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await run(device) }
                let deadline = ContinuousClock.now + .seconds(5)
                while !device.isConnected {
                    guard ContinuousClock.now < deadline else { throw TestAppError(message: "the device did not connect") }
                    try await Task.sleep(for: .milliseconds(20))
                }
                for change in 1...10 { try await app.setSelfStatus("bob", customStatus: "change \(change)") }
                try await Task.sleep(for: .milliseconds(500))
                var events = device.events.makeAsyncIterator()
                let bob = try await next(&events, within: .seconds(10)) { event -> UserStatus? in
                    guard case .statusChanged(let statuses, true, _) = event else { return nil }
                    return statuses.first { $0.userId == "bob" && $0.customStatus == "change 10" }
                }
                #expect(bob.customStatus == "change 10")
                group.cancelAll()
            }
        }
    }

    @Test func olderVersionsAreDroppedAndBackoffIsJittered() throws {
        var filter = VersionFilter()
        func status(_ version: Int) throws -> UserStatus {
            try JSONDecoder().decode(UserStatus.self, from: Data(#"{"userId":"bob","statusType":"online","version":\#(version),"extra":1}"#.utf8))
        }
        #expect(filter.admit(try status(3)))
        #expect(!filter.admit(try status(2)))
        #expect(filter.admit(try status(3)))
        #expect(filter.admit(try status(4)))

        let backoff = ReconnectBackoff(minimum: .milliseconds(500), maximum: .seconds(30))
        #expect(backoff.delay(attempt: 0, random: 0) == .milliseconds(250))
        #expect(backoff.delay(attempt: 0, random: 1) == .milliseconds(500))
        #expect(backoff.delay(attempt: 3, random: 1) == .milliseconds(4000))
        #expect(backoff.delay(attempt: 20, random: 0) == .seconds(15))
    }
}
