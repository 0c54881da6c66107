import Foundation
import StatusCore
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// SPEC §9: a node asked to stop (SIGTERM) drains: it stops being ready first, then closes its device sockets with
/// 1012 (service restart), spread over its drain time, and exits. Run on a child process, signalled like a real one.
@Suite(.redis, .tags(.runsAlone)) struct DrainTests {
    @Test func aNodeAskedToStopIsNotReadyThenClosesItsDevicesWith1012SpreadOverItsDrainTime() async throws {
        let adminKey = "admin-" + UUID().uuidString
        try await withStatusd(.live, adminKey: adminKey) { api in
            let app = try await api.createApp()
            let users = (0..<10).map { "u\($0)" }
            try await app.createUsers(users)
            let node = try await ChildNode(
                adminKey: adminKey,
                nodeId: "drain-" + UUID().uuidString.prefix(8).lowercased(),
                arguments: ["--drain-seconds", "2"]
            )
            defer { node.crash() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                var devices: [TestDevice] = []
                for user in users {
                    let (device, _) = try await app.openDevice(port: node.port, userId: user, DeviceOptions(deviceId: "d")) {
                        group.addTask(operation: $0)
                    }
                    devices.append(device)
                }
                #expect(try await Self.readiness(port: node.port) == 200)
                node.terminate()
                let asked = ContinuousClock.now
                // Not ready while most devices are still connected.
                var notReadyWithOpen: Int?
                while ContinuousClock.now - asked < .seconds(2) {
                    if try await Self.readiness(port: node.port) == 503 {
                        notReadyWithOpen = devices.count { !$0.isClosed }
                        break
                    }
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect((notReadyWithOpen ?? 0) >= 5, "readiness went false with \(String(describing: notReadyWithOpen)) of 10 devices open")
                for device in devices { try await device.waitClosed(timeout: .seconds(5)) }
                #expect(devices.allSatisfy { $0.closeCode == 1012 }, "close codes \(devices.map(\.closeCode))")
                // Spread: ten sockets over 2 s are closed one per 100 ms step, not all at once (each device noted when
                // its socket closed).
                let closedAt = devices.compactMap(\.closedAt)
                #expect(closedAt.count == devices.count)
                let spread = (closedAt.max() ?? asked) - (closedAt.min() ?? asked)
                #expect(spread >= .milliseconds(500), "closed within \(spread)")
                // Each went as by a dropped connection: offline (no grace here), not unlogined.
                let deadline = ContinuousClock.now + .seconds(5)
                while node.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
                #expect(!node.isRunning, "the node did not exit after its drain")
                #expect(try await app.backendStatus("u0")["statusType"].string == "offline")
                group.cancelAll()
            }
        }
    }

    /// `/readyz`'s HTTP status on `port`, or 0 when nothing answers.
    private static func readiness(port: Int) async throws -> Int {
        guard let (_, response) = try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/readyz")!) else { return 0 }
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
