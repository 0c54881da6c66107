import Foundation
import StatusCore
import Testing

@testable import StatusServer

/// SPEC §10.7 presence accuracy, measured: the time from a device's last inbound byte to its departure being filed, by
/// reason, and the ghost census, as the admin stats (and the console) show them.
@Suite(.redis) struct PresenceAccuracyTests {
    @Test func departuresAndCensusesAddUp() {
        let metrics = NodeMetrics()
        let accuracy = PresenceAccuracy(metrics: metrics)
        #expect(accuracy.snapshot == PresenceAccuracy.Snapshot(ghostDevices: nil, departures: [:]))
        accuracy.departureFiled(reason: "disconnect", lagMs: 10)
        accuracy.departureFiled(reason: "disconnect", lagMs: 30)
        accuracy.departureFiled(reason: "timeout", lagMs: 5_000)
        accuracy.departureFiled(reason: "timeout", lagMs: -3)
        accuracy.ghostCensus(2)
        accuracy.ghostCensus(0)
        let snapshot = accuracy.snapshot
        #expect(snapshot.ghostDevices == 0)
        #expect(snapshot.departures["disconnect"] == PresenceAccuracy.Departures(count: 2, totalMs: 40, maxMs: 30))
        #expect(snapshot.departures["disconnect"]?.meanMs == 20)
        #expect(snapshot.departures["timeout"]?.maxMs == 5_000)
        #expect(snapshot.departures["timeout"]?.count == 2)
        // The same figures in the node's own registry, which `/metrics` serves.
        let text = metrics.registry.emitToString()
        #expect(text.contains("statusd_ghost_devices 0"))
        #expect(text.contains(#"statusd_departure_lag_seconds_count{reason="disconnect"} 2"#))
        #expect(text.contains(#"statusd_departure_lag_seconds_count{reason="timeout"} 2"#))
    }

    @Test func aDroppedSocketIsFiledAtOnceAndShownInTheStats() async throws {
        try await withStatusd(.live) { api in
            let app = try await api.createApp()
            try await app.createUsers(["alice"])
            try await app.withDevice(port: api.client.port!, userId: "alice", DeviceOptions(deviceId: "a1")) { _, _ in }
            let deadline = ContinuousClock.now + .seconds(3)
            var departures = JSONValue.null
            repeat {
                let stats = try await api.admin(.get, "/v1/apps/\(app.appId)/stats")
                departures = stats.body["node"]["presenceAccuracy"]["departures"]["disconnect"]
                if departures["count"].int ?? 0 > 0 { break }
                try await Task.sleep(for: .milliseconds(50))
            } while ContinuousClock.now < deadline
            #expect((departures["count"].int ?? 0) >= 1)
            // The socket closed with a close frame: filed within moments of the device's last byte.
            #expect((departures["maxMs"].int ?? .max) < 2_000, "\(departures)")
        }
    }
}
