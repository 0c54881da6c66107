import Foundation
import StatusdClient

/// Sends status changes at a target rate: each change is a `setSelfStatus` whose custom status is
/// `"<seq>:<send time, monotonic µs>"`, made by a random connected device over its WebSocket (the frame is written on
/// the device's event loop), or with `PUT .../status` through the server API (`--via http`, at most 256 calls in
/// flight).
struct ChangeDriver: Sendable {
    let registry: DeviceRegistry
    let stats: LoadStats
    let http: HTTPChanges?
    let node: Int?

    /// The server API target of `--via http`.
    struct HTTPChanges: Sendable {
        let app: StatusdApp
    }

    /// Sends `rate` changes per second for `seconds` (or until `stopFile` exists), paced against a monotonic clock
    /// (late ticks are sent at once).
    func run(rate: Double, seconds: Double, seed: UInt64, stopFile: String? = nil) async {
        guard rate > 0 else { return }
        var generator = SplitMix64(seed: seed)
        let total = Int(rate * seconds)
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            for index in 0..<total {
                let deadline = start + .nanoseconds(Int64(Double(index) / rate * 1e9))
                if deadline > .now { try? await Task.sleep(until: deadline, clock: .continuous) }
                if Task.isCancelled { break }
                if let stopFile, FileManager.default.fileExists(atPath: stopFile) { break }
                guard let pick = registry.pick(node: node, using: &generator) else {
                    stats.recordSkipped()
                    continue
                }
                let sequence = stats.recordSend(expectedPerNode: pick.expectedPerNode)
                let customStatus = "\(sequence):\(MonotonicClock.micros())"
                if let http {
                    if inFlight >= 256 {
                        await group.next()
                        inFlight -= 1
                    }
                    inFlight += 1
                    let user = AppProvisioner.userId(pick.user)
                    group.addTask {
                        do {
                            try await http.app.setSelfStatus(user, customStatus: customStatus)
                            stats.recordHTTPReply(ok: true)
                        } catch {
                            stats.recordHTTPReply(ok: false)
                        }
                    }
                } else {
                    let frame = #"{"id":"\#(sequence)","op":"setSelfStatus","customStatus":"\#(customStatus)"}"#
                    pick.link.send(frame)
                }
            }
        }
    }
}
